"""Reference of tests/ui/reference/pass_e0018_reference.mpk: y = 2 x, in plain Python."""

MPKC_ARRAYS = "python"


def double_it(x):
    return [2.0 * v for v in x.data]
