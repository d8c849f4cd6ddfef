"""References of tests/ui/reference/e0018_reference_signature.mpk: functions whose parameters
cannot take the call verify makes (one positional argument per input, `params=` by keyword)."""

MPKC_ARRAYS = "python"


def one_input(x):
    return [2.0 * v for v in x.data]


def three_inputs(x, w, bias):
    return [2.0 * v for v in x.data]


def params_first(params, x):
    return [2.0 * v for v in x.data]


def keyword_only(x, *, eps):
    return [eps * v for v in x.data]


def with_state(x, counters, params=None):
    return [2.0 * v for v in x.data]


def scaled(x, w=None, *rest, params, eps=1e-6, **kw):
    return [params["m"] * v for v in x.data]
