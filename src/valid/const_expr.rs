//! Integer constant expressions in an inline body's C++ (E0406's barrier ids and counts, the
//! `static_assert`s a body or helper states over its params): literals, names whose value the
//! caller knows, and C++'s integer operators with C++'s precedence and results (a comparison or
//! a logical operator gives 0 or 1; `/` and `%` truncate toward zero). Values carry C++'s type
//! as far as it matters: an `int` operation whose result leaves 32 bits, and an unsigned value
//! that would wrap (below 0 or past `INT_MAX`), are given up (`None`), never guessed, so a value
//! [`eval`] returns is the one C++ computes.

/// The value of `s`, an integer constant expression: decimal, `0x` hex, `0b` binary and `0`
/// octal literals (digit separators `'`, suffixes `u`, `l`); names (identifiers, `::` qualified
/// or not) that `names` gives a value, `None` from it giving up; parentheses; unary `+ - ! ~`;
/// binary `* / %`, `+ -`, `<< >>`, `< <= > >=`, `== !=`, `&`, `^`, `|`, `&&`, `||`. `None` for
/// anything else (a register `%0`, a call, an assignment, `?:`), on overflow, a division by zero
/// or a shift C++ gives no value (a count outside the operand's width, a negative operand), and
/// past [`MAX_DEPTH`] nested operands.
pub fn eval(s: &str, names: &dyn Fn(&str) -> Option<(i64, Ty)>) -> Option<i64> {
    eval_or_fault(s, names).ok()
}

/// [`eval`], telling apart why there is no value: `Err(Some(why))` where C++ gives the
/// expression none although every operand of the faulting operation is known, so that it is not
/// a constant expression and nvcc rejects it ("a division by zero", "a signed overflow" of an
/// `int` or `long` `+ - * / % <<` or unary `-`, a shift count negative or past the operand's
/// width, a left shift of a negative value: all undefined behaviour); `Err(None)` where [`eval`]
/// gives up (an unknown name, an operator it does not read, an unsigned wrap, a shift of an
/// unsigned operand past 31 bits or of a negative one to the right). An operand that
/// C++ does not evaluate (the right of `0 && …`, `1 || …`) reports no fault.
///
/// # Errors
///
/// As above.
pub fn eval_or_fault(
    s: &str,
    names: &dyn Fn(&str) -> Option<(i64, Ty)>,
) -> Result<i64, Option<&'static str>> {
    let mut p = Parser {
        b: s.as_bytes(),
        i: 0,
        depth: 0,
        names,
        fault: None,
    };
    let v = p.binary(0);
    if let Some(why) = p.fault {
        return Err(Some(why));
    }
    let v = v.ok_or(None)?;
    p.skip_ws();
    if p.i == p.b.len() {
        Ok(v.0)
    } else {
        Err(None)
    }
}

/// The C++ type of a value, as far as [`eval`] tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `int` (32-bit): a literal that fits, `kConsumerThreads`, a `BAR_<NAME>` id, an `i32` or
    /// `bool` param.
    Int,
    /// `long` / `int64_t`: an `int` param (`params::NAME` is `int64_t`), a literal past `INT_MAX`
    /// or with an `l` suffix.
    Long,
    /// Unsigned (a `u` suffix, or a hex, octal or binary literal past `INT_MAX`): kept only while
    /// it lies in `0..=INT_MAX`, where every unsigned width agrees with the signed value.
    Unsigned,
}

/// A value and its C++ type.
type Val = (i64, Ty);

/// How deep [`eval`] nests before it gives up (no id or assertion needs more; the stack stays
/// small).
pub const MAX_DEPTH: usize = 64;

/// The binary operators by precedence level, loosest first (C++'s table).
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<=", ">=", "<", ">"],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

/// Tokens an operator of [`LEVELS`] must not be the start of (`<` of `<<`, `&` of `&&`, `+` of
/// `+=`): such text is another operator, which [`eval`] does not read.
const LONGER: [&str; 22] = [
    "||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=", "^=", "->", "<<=", ">>=", "<=>",
];

/// A recursive-descent reader of [`eval`]'s expressions.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    /// Operands open (parentheses, unary operators, levels): past [`MAX_DEPTH`] it gives up.
    depth: usize,
    /// The value and type of a name, where one is known.
    names: &'a dyn Fn(&str) -> Option<(i64, Ty)>,
    /// The first operation C++ gives no value although its operands are known
    /// ([`eval_or_fault`]).
    fault: Option<&'static str>,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    /// Consumes operator `op` at the next non-space byte, unless the text there is a longer
    /// token `op` begins ([`LONGER`]).
    fn eat(&mut self, op: &str) -> bool {
        self.skip_ws();
        let rest = &self.b[self.i..];
        if !rest.starts_with(op.as_bytes()) {
            return false;
        }
        let longer = LONGER
            .iter()
            .any(|l| l.len() > op.len() && l.starts_with(op) && rest.starts_with(l.as_bytes()));
        if longer {
            return false;
        }
        self.i += op.len();
        true
    }

    /// The operators of `level` and tighter, left to right.
    fn binary(&mut self, level: usize) -> Option<Val> {
        if level == LEVELS.len() {
            return self.unary();
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH * LEVELS.len() {
            return None;
        }
        let mut v = self.binary(level + 1)?;
        'ops: loop {
            for &op in LEVELS[level] {
                if self.eat(op) {
                    // The right of `0 && …` and `1 || …` is not evaluated: no fault of its
                    // counts.
                    let skipped = (op == "&&" && v.0 == 0) || (op == "||" && v.0 != 0);
                    let before = self.fault;
                    let r = self.binary(level + 1);
                    if skipped {
                        self.fault = before;
                    }
                    let r = r?;
                    match apply(op, v, r) {
                        Ok(x) => v = x,
                        Err(why) => {
                            self.fault = self.fault.or(why);
                            return None;
                        }
                    }
                    continue 'ops;
                }
            }
            break;
        }
        self.depth -= 1;
        Some(v)
    }

    fn unary(&mut self) -> Option<Val> {
        self.depth += 1;
        if self.depth > MAX_DEPTH * LEVELS.len() {
            return None;
        }
        let v = if self.eat("-") {
            let (x, t) = self.unary()?;
            match x.checked_neg().and_then(|n| fit(n, t)) {
                Some(v) => Some(v),
                // An unsigned negation wraps (defined, of a width not known here): given up.
                None if t == Ty::Unsigned => None,
                // `-INT_MIN`: a signed overflow, no value in C++.
                None => {
                    self.fault = self.fault.or(Some("a signed overflow"));
                    None
                }
            }
        } else if self.eat("+") {
            self.unary()
        } else if self.eat("!") {
            self.unary().map(|(x, _)| (i64::from(x == 0), Ty::Int))
        } else if self.eat("~") {
            let (x, t) = self.unary()?;
            fit(!x, t)
        } else if self.eat("(") {
            let v = self.binary(0)?;
            self.eat(")").then_some(v)
        } else {
            self.literal()
        };
        self.depth -= 1;
        v
    }

    fn literal(&mut self) -> Option<Val> {
        self.skip_ws();
        let start = self.i;
        if self
            .b
            .get(start)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            return self.name(start);
        }
        while self
            .b
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'\'')
        {
            self.i += 1;
        }
        let text: String = std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .chars()
            .filter(|c| *c != '\'')
            .collect();
        let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
        let suffix = &text[digits.len()..];
        if !digits.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let (radix, body) = match digits.get(..2) {
            Some("0x" | "0X") => (16, &digits[2..]),
            Some("0b" | "0B") => (2, &digits[2..]),
            _ if digits.len() > 1 && digits.starts_with('0') => (8, &digits[1..]),
            _ => (10, digits),
        };
        let v = i64::from_str_radix(body, radix).ok()?;
        // C++'s literal types: `u` unsigned; past INT_MAX a decimal one is `long`, a hex, octal
        // or binary one `unsigned int` (up to UINT_MAX); `l` long.
        let ty = if suffix.contains(['u', 'U']) || (radix != 10 && v > i64::from(i32::MAX)) {
            Ty::Unsigned
        } else if suffix.contains(['l', 'L']) || v > i64::from(i32::MAX) {
            Ty::Long
        } else {
            Ty::Int
        };
        fit(v, ty)
    }

    /// The name starting at `start` (letters, digits, `_` and `::`), looked up in `names`.
    fn name(&mut self, start: usize) -> Option<Val> {
        self.i = start;
        while self
            .b
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            || (self.b.get(self.i) == Some(&b':') && self.b.get(self.i + 1) == Some(&b':'))
        {
            self.i += if self.b[self.i] == b':' { 2 } else { 1 };
        }
        (self.names)(std::str::from_utf8(&self.b[start..self.i]).ok()?)
    }
}

/// `v` as a value of type `t`, or `None` where C++ would not hold it as computed: an `int`
/// outside 32 bits (overflow), an unsigned value outside `0..=INT_MAX` (wrapped, or of a width
/// that decides its value).
fn fit(v: i64, t: Ty) -> Option<Val> {
    let ok = match t {
        Ty::Int => i32::try_from(v).is_ok(),
        Ty::Long => true,
        Ty::Unsigned => (0..=i64::from(i32::MAX)).contains(&v),
    };
    ok.then_some((v, t))
}

/// Why an operation has no value: `Some(why)` where C++ gives it none (undefined behaviour, so
/// the expression is not a constant expression), `None` where [`eval`] gives up.
type Fault = Option<&'static str>;

/// `l op r` as C++ computes it; `Err` where C++ has no value (a division by zero, a signed
/// overflow, a shift C++17 gives no value: `Err(Some(why))`) or where [`eval`] gives up (an unsigned shift past 31 bits, an unsigned
/// wrap, a negative operand meeting an unsigned one: `Err(None)`).
fn apply(op: &str, (l, lt): Val, (r, rt): Val) -> Result<Val, Fault> {
    let truth = |b: bool| Ok((i64::from(b), Ty::Int));
    // The usual arithmetic conversions: unsigned wins, then long (an unsigned operand here lies
    // in 0..=INT_MAX, so a comparison reads the same either way).
    let common = match (lt, rt) {
        (Ty::Unsigned, _) | (_, Ty::Unsigned) => Ty::Unsigned,
        (Ty::Long, _) | (_, Ty::Long) => Ty::Long,
        _ => Ty::Int,
    };
    let wraps = common == Ty::Unsigned && (l < 0 || r < 0);
    match op {
        "||" => truth(l != 0 || r != 0),
        "&&" => truth(l != 0 && r != 0),
        // A negative operand meeting an unsigned one converts (wraps): given up.
        "==" | "!=" | "<=" | ">=" | "<" | ">" if wraps => Err(None),
        "==" => truth(l == r),
        "!=" => truth(l != r),
        "<=" => truth(l <= r),
        ">=" => truth(l >= r),
        "<" => truth(l < r),
        ">" => truth(l > r),
        // A shift takes its left operand's (promoted) type. C++17 [expr.shift]: a negative count,
        // or one of at least the operand's width in bits, has no value; so has `E1 << E2` of a
        // signed E1 that is negative, or whose E1 x 2^E2 the unsigned type of that width does not
        // hold; where it does, the value converted to the signed type (`1 << 31` is INT_MIN). A
        // negative E1 of `>>` is implementation-defined, and an unsigned operand's width is not
        // known here: both given up.
        "<<" | ">>" => {
            let width: i64 = match lt {
                Ty::Int => 32,
                Ty::Long => 64,
                Ty::Unsigned => 0,
            };
            if r < 0 {
                return Err(Some("a negative shift count"));
            }
            if width > 0 && r >= width {
                return Err(Some("a shift count past its operand's width"));
            }
            let s = u32::try_from(r).ok().filter(|s| *s < 64).ok_or(None)?;
            if op == ">>" {
                return if l < 0 {
                    Err(None)
                } else {
                    fit(l >> s, lt).ok_or(None)
                };
            }
            match lt {
                Ty::Unsigned => {
                    let v = l.checked_shl(s).filter(|v| v >> s == l).ok_or(None)?;
                    fit(v, lt).ok_or(None)
                }
                _ if l < 0 => Err(Some("a left shift of a negative value")),
                _ => {
                    // l < 2^63 and s < 64: exact in u128.
                    let v = u128::try_from(l).map_err(|_| None)? << s;
                    if v >> width != 0 {
                        return Err(Some("a signed overflow"));
                    }
                    // Converted to the signed type of `width` bits (two's complement).
                    let v = if width == 32 {
                        i64::from(u32::try_from(v).map_err(|_| None)? as i32)
                    } else {
                        u64::try_from(v).map_err(|_| None)? as i64
                    };
                    Ok((v, lt))
                }
            }
        }
        _ if wraps => Err(None),
        "|" => fit(l | r, common).ok_or(None),
        "^" => fit(l ^ r, common).ok_or(None),
        "&" => fit(l & r, common).ok_or(None),
        "+" | "-" | "*" | "/" | "%" => {
            if matches!(op, "/" | "%") && r == 0 {
                return Err(Some("a division by zero"));
            }
            // `INT_MIN % -1` has no value in C++ (its quotient overflows), though i64's is 0.
            let min = if common == Ty::Int {
                i64::from(i32::MIN)
            } else {
                i64::MIN
            };
            let v = match op {
                "+" => l.checked_add(r),
                "-" => l.checked_sub(r),
                "*" => l.checked_mul(r),
                "/" => l.checked_div(r),
                _ if l == min && r == -1 => None,
                _ => l.checked_rem(r),
            };
            // Outside its type: a signed result overflowed (undefined), an unsigned one wrapped
            // (defined, but of a width `eval` does not know: given up).
            let overflow = (common != Ty::Unsigned).then_some("a signed overflow");
            v.and_then(|v| fit(v, common)).ok_or(overflow)
        }
        _ => Err(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_told_apart_from_giving_up() {
        let f = |s: &str| eval_or_fault(s, &|n| (n == "params::m").then_some((1, Ty::Long)));
        for (text, want) in [
            ("16 / (params::m - 1) > 0", Err(Some("a division by zero"))),
            ("8 % 0", Err(Some("a division by zero"))),
            ("2147483647 + 1", Err(Some("a signed overflow"))),
            ("(-2147483647 - 1) / -1", Err(Some("a signed overflow"))),
            ("(-2147483647 - 1) % -1", Err(Some("a signed overflow"))),
            (
                "9223372036854775807 + params::m",
                Err(Some("a signed overflow")),
            ),
            // Not evaluated by C++: no fault.
            ("0 && 1 / 0", Err(None)),
            ("1 || 1 / 0", Err(None)),
            ("params::m > 0 || 1 / 0", Err(None)),
            // C++17's shifts: a count past the width, a negative count or operand, a value the
            // unsigned type of the width does not hold; `1 << 31` is INT_MIN.
            (
                "1 << 32",
                Err(Some("a shift count past its operand's width")),
            ),
            (
                "1 << params::m * 40",
                Err(Some("a shift count past its operand's width")),
            ),
            (
                "1l << 64",
                Err(Some("a shift count past its operand's width")),
            ),
            ("1 << -1", Err(Some("a negative shift count"))),
            ("-1 << 1", Err(Some("a left shift of a negative value"))),
            ("2 << 31", Err(Some("a signed overflow"))),
            ("(1 << 31) > 0", Ok(0)),
            ("1 << 31", Ok(i64::from(i32::MIN))),
            ("3 << 30", Ok(i64::from(i32::MIN) + (1 << 30))),
            ("4611686018427387904 << 1", Ok(i64::MIN)),
            ("-(-2147483647 - 1)", Err(Some("a signed overflow"))),
            (
                "-(-9223372036854775807 - 1)",
                Err(Some("a signed overflow")),
            ),
            ("-2147483648 == -2147483647 - 1", Ok(1)),
            // Given up, not faulted: unknown names, unsigned wraps, negative `>>`.
            ("x / 0", Err(None)),
            ("x + 1", Err(None)),
            ("0u - 1 > 0", Err(None)),
            ("-1u", Err(None)),
            ("-8 >> 1", Err(None)),
            ("1u << 40", Err(None)),
            ("2147483647 + 0", Ok(2147483647)),
            ("16 / params::m", Ok(16)),
        ] {
            assert_eq!(f(text), want, "{text}");
        }
    }

    fn lit(s: &str) -> Option<i64> {
        eval(s, &|_| None)
    }

    #[test]
    fn literals_and_arithmetic() {
        for (text, v) in [
            ("8", Some(8)),
            (" 1 + 7 ", Some(8)),
            ("2 * (3 + 1)", Some(8)),
            ("-(-8)", Some(8)),
            ("0x8", Some(8)),
            ("010", Some(8)),
            ("0b1000", Some(8)),
            ("8u", Some(8)),
            ("1'0", Some(10)),
            ("16 - 4 * 2", Some(8)),
            ("17 / 2", Some(8)),
            ("-17 / 2", Some(-8)),
            ("-17 % 5", Some(-2)),
            ("8 / 0", None),
            ("8 % 0", None),
            ("(1 + 7", None),
            ("1 +", None),
            ("9223372036854775807 + 1", None),
            ("", None),
            ("%0", None),
        ] {
            assert_eq!(lit(text), v, "{text}");
        }
    }

    #[test]
    fn the_other_operators_with_cpps_precedence() {
        for (text, v) in [
            ("2 << 1 | 2", Some(6)),
            ("1 << 3", Some(8)),
            ("1 << 64", None),
            ("1 << -1", None),
            ("-1 >> 1", None),
            ("4611686018427387904 << 1", Some(i64::MIN)),
            ("1073741824l << 1", Some(2147483648)),
            ("7168 % 128 == 0", Some(1)),
            ("7200 % 128 == 0", Some(0)),
            ("1 + 2 == 3 && 4 > 3", Some(1)),
            ("0 || 2 < 1", Some(0)),
            ("!0", Some(1)),
            ("!(3 != 3)", Some(1)),
            ("~0", Some(-1)),
            ("6 & 3 ^ 1", Some(3)),
            ("1 | 2 & 0", Some(1)),
            ("2 <= 2 >= 1", Some(1)),
            // Other C++ tokens are not read as a shorter operator.
            ("1 <<= 2", None),
            ("1 += 2", None),
            ("a -> b", None),
            ("1 ? 2 : 3", None),
            ("1 = 1", None),
            // Unsigned operands: C++ converts a negative one (wrapping), which is given up.
            ("8u", Some(8)),
            ("8u - 1", Some(7)),
            ("-1 < 0u", None),
            ("1u - 2", None),
            ("0u - 1 > 0", None),
            ("-1u", None),
            ("~0u", None),
            ("-1 > 1u", None),
            ("-1 % 3u", None),
            ("4294967295u + 1", None),
            ("0xFFFFFFFF == -1", None),
            // `int` arithmetic past 32 bits overflows in C++ (no value); `long` does not; `1 << 31`
            // is INT_MIN (C++17: 2^31 fits the unsigned int, converted).
            ("1 << 31", Some(i64::from(i32::MIN))),
            ("2147483647 + 1", None),
            ("2147483648 + 1", Some(2147483649)),
            ("1l << 40", Some(1 << 40)),
            ("-1 << 1", None),
            ("-8 >> 1", None),
        ] {
            assert_eq!(lit(text), v, "{text}");
        }
    }

    #[test]
    fn names_resolve_or_give_up() {
        let names = |n: &str| match n {
            "BAR_X" => Some((2, Ty::Int)),
            "params::n" => Some((7200, Ty::Long)),
            "params::k" => Some((1, Ty::Int)),
            _ => None,
        };
        for (text, v) in [
            ("BAR_X + 6", Some(8)),
            ("(BAR_X)*4", Some(8)),
            ("BAR_X << 1 | 2", Some(6)),
            ("params::n % 128 == 0", Some(0)),
            ("params::m > 0", None),
            // `params::n` is int64_t: no 32-bit overflow; an i32 param's is.
            ("params::n * 1000000 > 0", Some(1)),
            ("params::k << 31 < 0", Some(1)),
            ("params::k << 32 < 0", None),
            ("BAR_X +", None),
        ] {
            assert_eq!(eval(text, &names), v, "{text}");
        }
    }

    #[test]
    fn deep_nesting_gives_up_without_deep_recursion() {
        assert_eq!(
            lit(&format!("{}8{}", "(".repeat(32), ")".repeat(32))),
            Some(8)
        );
        assert_eq!(lit(&"(".repeat(100_000)), None);
        assert_eq!(lit(&"-".repeat(100_000)), None);
        assert_eq!(lit(&"!".repeat(100_000)), None);
    }
}
