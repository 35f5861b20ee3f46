//! `pattern` and `patternProperties`: ECMA-262 regular expressions (with the `u` flag, as JSON Schema and its
//! test suite read them), run in linear time. A pattern is parsed here with ECMA-262's grammar and written
//! out in `regex-lite`'s syntax, whose matching takes time proportional to the pattern's compiled size times
//! the text's length, whatever the two are: no argument a model writes can make a match backtrack (ECMA's
//! `^(a+)+$`, exponential in a backtracking engine, is linear here).
//!
//! Every construct is written out with ECMA-262's meaning, not the Rust engine's:
//! - `.` is any character but a line terminator (`\n`, `\r`, U+2028, U+2029);
//! - `\d` is `[0-9]` and `\w` is `[0-9A-Za-z_]` (ASCII, as ECMA-262 without the `i` flag), `\b` their
//!   boundary; `\s` is ECMA-262's white space and line terminators (U+00A0, U+FEFF, the Unicode spaces
//!   included);
//! - `^` and `$` are the start and end of the text (no `m` flag);
//! - a character class is a set of code points, written out range by range (`[` inside a class is
//!   itself, `[]` matches nothing, `[^]` anything, `\b` in a class is U+0008); escapes and literals are
//!   written as code points, so no character means anything else to the Rust engine;
//! - `\uD83D\uDE00` is one code point; a lone surrogate matches nothing (no Rust string holds one);
//! - groups are not captured (only whether the text matches counts).
//!
//! Refused at `register` (`PatternError`), naming the keyword: what ECMA-262 refuses with the `u` flag
//! (`\-` outside a class, a lone `{`, `(?i)`, ...), and what no linear-time engine runs or this one does not
//! know: lookahead and lookbehind, backreferences (`\1`, `\k<name>`), Unicode property escapes (`\p{...}`),
//! and a pattern whose counted repetitions make it larger than `SIZE_LIMIT` once expanded (`.{0,5000}`:
//! `maxLength` says that better).

use std::fmt;

/// A compiled pattern: ECMA-262's meaning, matched in linear time. Unanchored, as JSON Schema says: it
/// matches if it matches anywhere in the text.
pub struct Pattern(regex_lite::Regex);

/// Why a pattern is refused, and where (`at`: the index of the character, counted in code points).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// Not an ECMA-262 regular expression (with the `u` flag).
    Invalid { at: usize, what: &'static str },
    /// ECMA-262, but not something a linear-time engine runs (or this one knows).
    Unsupported { at: usize, what: &'static str },
    /// Larger than `SIZE_LIMIT` once its counted repetitions are expanded.
    TooLarge,
}

/// The largest compiled pattern accepted, in bytes of the engine's program: the time a match takes is at
/// most proportional to this times the text's length. `^[a-z]{1,64}$` takes about 5 KB, an e-mail address
/// pattern under 1 KB, `^.{0,1000}$` about 110 KB; `^.{0,5000}$` is refused.
pub const SIZE_LIMIT: usize = 256 << 10;

/// Deeper nesting of groups is refused (the parser recurses once per group).
const NEST_LIMIT: usize = 128;

impl Pattern {
    /// Compiles an ECMA-262 pattern.
    pub fn new(source: &str) -> Result<Pattern, PatternError> {
        let translated = translate(source)?;
        let regex = regex_lite::RegexBuilder::new(&translated)
            .size_limit(SIZE_LIMIT)
            .nest_limit(2 * NEST_LIMIT as u32 + 2)
            .build();
        // The translation is always valid syntax: what the engine refuses is its size.
        regex.map(Pattern).map_err(|_| PatternError::TooLarge)
    }

    /// Whether the pattern matches anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternError::Invalid { at, what } => {
                write!(f, "is not a valid regular expression ({what} at index {at})")
            }
            PatternError::Unsupported { at, what } => write!(
                f,
                "is not supported ({what} at index {at}): patterns are matched in linear time, \
                 without lookaround, backreferences or \\p{{...}} classes"
            ),
            PatternError::TooLarge => write!(
                f,
                "is too large once its counted repetitions are expanded (over {} KB): use minLength \
                 and maxLength for lengths",
                SIZE_LIMIT >> 10
            ),
        }
    }
}

/// A pattern in `regex-lite`'s syntax with the meaning `source` has in ECMA-262.
pub(crate) fn translate(source: &str) -> Result<String, PatternError> {
    let mut parser = Parser {
        chars: source.chars().collect(),
        at: 0,
        out: String::with_capacity(source.len() * 2),
        names: Vec::new(),
        depth: 0,
    };
    parser.disjunction()?;
    match parser.peek() {
        None => Ok(parser.out),
        Some(_) => Err(parser.invalid("unmatched ')'")),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Sets of code points: a class, `.`, `\d`, `\s`, `\w` and their negations, written out as ranges.

/// Code point ranges, inclusive, sorted, apart, and without surrogates.
type Set = Vec<(u32, u32)>;

const MAX: u32 = 0x10_FFFF;
const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);

/// `ranges` sorted and merged, surrogates left out.
fn normalize(mut ranges: Vec<(u32, u32)>) -> Set {
    let mut cut = Vec::with_capacity(ranges.len() + 1);
    for (lo, hi) in ranges.drain(..) {
        if lo < SURROGATES.0 {
            cut.push((lo, hi.min(SURROGATES.0 - 1)));
        }
        if hi > SURROGATES.1 {
            cut.push((lo.max(SURROGATES.1 + 1), hi));
        }
    }
    cut.sort();
    let mut set: Set = Vec::with_capacity(cut.len());
    for (lo, hi) in cut {
        match set.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => set.push((lo, hi)),
        }
    }
    set
}

/// Every code point (but surrogates) not in `set`.
fn complement(set: &Set) -> Set {
    let mut out = Vec::with_capacity(set.len() + 1);
    let mut next = 0;
    for &(lo, hi) in set {
        if lo > next {
            out.push((next, lo - 1));
        }
        next = hi + 1;
    }
    if next <= MAX {
        out.push((next, MAX));
    }
    normalize(out)
}

/// The sets of the class escapes, ECMA-262's.
fn digits() -> Set {
    vec![(0x30, 0x39)]
}

fn word() -> Set {
    vec![(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
}

/// WhiteSpace (TAB, VT, FF, SP, U+00A0, U+FEFF and the other Zs) and LineTerminator (LF, CR, U+2028,
/// U+2029).
fn space() -> Set {
    normalize(vec![
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}

/// `.`: anything but a line terminator.
fn dot() -> Set {
    complement(&normalize(vec![
        (0x0A, 0x0A),
        (0x0D, 0x0D),
        (0x2028, 0x2029),
    ]))
}

/// One code point as the Rust engine reads it literally: ASCII letters and digits as themselves, anything
/// else by its number (so no character is a metacharacter there, in a class or out of one).
fn push_char(out: &mut String, c: u32) {
    match char::from_u32(c) {
        Some(c) if c.is_ascii_alphanumeric() => out.push(c),
        _ => {
            use fmt::Write;
            let _ = write!(out, "\\x{{{c:X}}}");
        }
    }
}

/// A set as one class (a set with nothing in it matches nothing).
fn push_set(out: &mut String, set: &Set) {
    if set.is_empty() {
        out.push_str("[^\\x{0}-\\x{10FFFF}]");
        return;
    }
    out.push('[');
    for &(lo, hi) in set {
        push_char(out, lo);
        if hi > lo {
            out.push('-');
            push_char(out, hi);
        }
    }
    out.push(']');
}

// ---------------------------------------------------------------------------------------------------------
// The parser: ECMA-262's Pattern grammar with the `u` flag (22.2.1), one construct at a time.

/// A class atom: one code point, or a class escape's set (which may not end a range).
enum ClassAtom {
    Char(u32),
    Set(Set),
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    out: String,
    /// The group names seen so far (a name may be used once).
    names: Vec<String>,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        self.at += usize::from(found);
        found
    }

    fn invalid(&self, what: &'static str) -> PatternError {
        PatternError::Invalid { at: self.at, what }
    }

    fn unsupported(&self, at: usize, what: &'static str) -> PatternError {
        PatternError::Unsupported { at, what }
    }

    /// Alternative ( `|` Alternative )*
    fn disjunction(&mut self) -> Result<(), PatternError> {
        loop {
            while !matches!(self.peek(), None | Some('|' | ')')) {
                self.term()?;
            }
            if !self.eat('|') {
                return Ok(());
            }
            self.out.push('|');
        }
    }

    /// An assertion, or an atom with its quantifier.
    fn term(&mut self) -> Result<(), PatternError> {
        let start = self.at;
        let c = self.peek().unwrap_or_default();
        let quantifiable = match c {
            '^' | '$' => {
                self.at += 1;
                self.out.push(c);
                false
            }
            '\\' if matches!(self.peek_at(1), Some('b' | 'B')) => {
                self.out.push('\\');
                self.out.push(self.chars[self.at + 1]);
                self.at += 2;
                false
            }
            '(' => {
                self.group()?;
                true
            }
            '.' => {
                self.at += 1;
                push_set(&mut self.out, &dot());
                true
            }
            '[' => {
                let set = self.class()?;
                push_set(&mut self.out, &set);
                true
            }
            '\\' => {
                match self.atom_escape()? {
                    ClassAtom::Char(c) => match c {
                        0xD800..=0xDFFF => push_set(&mut self.out, &Vec::new()),
                        c => push_char(&mut self.out, c),
                    },
                    ClassAtom::Set(set) => push_set(&mut self.out, &set),
                }
                true
            }
            '*' | '+' | '?' => return Err(self.invalid("nothing to repeat")),
            '{' => {
                return Err(match self.quantifier_braces() {
                    Some(_) => PatternError::Invalid {
                        at: start,
                        what: "nothing to repeat",
                    },
                    None => self.invalid("lone quantifier brackets"),
                })
            }
            '}' | ']' => return Err(self.invalid("lone quantifier brackets")),
            c => {
                self.at += 1;
                push_char(&mut self.out, u32::from(c));
                true
            }
        };
        if matches!(self.peek(), Some('*' | '+' | '?' | '{')) {
            if !quantifiable {
                return Err(self.invalid("nothing to repeat"));
            }
            self.quantifier()?;
        }
        Ok(())
    }

    /// `*`, `+`, `?` or `{n}`, `{n,}`, `{n,m}`, then `?` for a lazy one.
    fn quantifier(&mut self) -> Result<(), PatternError> {
        match self.peek() {
            Some(c @ ('*' | '+' | '?')) => {
                self.at += 1;
                self.out.push(c);
            }
            _ => {
                let at = self.at;
                let Some((min, max, length)) = self.quantifier_braces() else {
                    return Err(self.invalid("incomplete quantifier"));
                };
                if max.is_some_and(|max| max < min) {
                    return Err(PatternError::Invalid {
                        at,
                        what: "numbers out of order in {} quantifier",
                    });
                }
                self.at += length;
                let count = |n: u64| u32::try_from(n).map_err(|_| PatternError::TooLarge);
                let min = count(min)?;
                let text = match max {
                    None => format!("{{{min},}}"),
                    Some(max) if u64::from(min) == max => format!("{{{min}}}"),
                    Some(max) => format!("{{{min},{}}}", count(max)?),
                };
                self.out.push_str(&text);
            }
        }
        if self.eat('?') {
            self.out.push('?');
        }
        Ok(())
    }

    /// `{n}`, `{n,}` or `{n,m}` at the current position, not consumed: the bounds and its length.
    fn quantifier_braces(&self) -> Option<(u64, Option<u64>, usize)> {
        let mut i = self.at + 1;
        let number = |i: &mut usize| {
            let start = *i;
            let mut n: u64 = 0;
            while let Some(d) = self.chars.get(*i).and_then(|c| c.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(u64::from(d));
                *i += 1;
            }
            (*i > start).then_some(n)
        };
        let min = number(&mut i)?;
        let max = match self.chars.get(i) {
            Some(',') => {
                i += 1;
                number(&mut i)
            }
            _ => Some(min),
        };
        (self.chars.get(i) == Some(&'}')).then_some((min, max, i + 1 - self.at))
    }

    /// `(...)`, `(?:...)`, `(?<name>...)`; lookarounds are refused. Written as a non-capturing group.
    fn group(&mut self) -> Result<(), PatternError> {
        let start = self.at;
        self.at += 1;
        if self.eat('?') {
            match (self.peek(), self.peek_at(1)) {
                (Some(':'), _) => self.at += 1,
                (Some('=' | '!'), _) => return Err(self.unsupported(start, "a lookahead")),
                (Some('<'), Some('=' | '!')) => return Err(self.unsupported(start, "a lookbehind")),
                (Some('<'), _) => {
                    self.at += 1;
                    self.group_name()?;
                }
                _ => return Err(self.invalid("invalid group")),
            }
        }
        self.depth += 1;
        if self.depth > NEST_LIMIT {
            return Err(self.invalid("groups nested too deeply"));
        }
        self.out.push_str("(?:");
        self.disjunction()?;
        if !self.eat(')') {
            return Err(PatternError::Invalid {
                at: start,
                what: "unterminated group",
            });
        }
        self.out.push(')');
        self.depth -= 1;
        Ok(())
    }

    /// A group's name up to its `>`: an identifier, used once in the pattern.
    fn group_name(&mut self) -> Result<(), PatternError> {
        let start = self.at;
        let mut name = String::new();
        loop {
            match self.peek() {
                Some('>') if !name.is_empty() => break,
                Some('\\') => return Err(self.unsupported(self.at, "an escape in a group name")),
                Some(c)
                    if c == '$'
                        || c == '_'
                        || c.is_alphabetic()
                        || (!name.is_empty()
                            && (c.is_alphanumeric() || c == '\u{200C}' || c == '\u{200D}')) =>
                {
                    name.push(c);
                    self.at += 1;
                }
                _ => return Err(self.invalid("invalid capture group name")),
            }
        }
        self.at += 1;
        if self.names.contains(&name) {
            return Err(PatternError::Invalid {
                at: start,
                what: "duplicate capture group name",
            });
        }
        self.names.push(name);
        Ok(())
    }

    /// After `\` outside a class: a class escape, a character escape; backreferences and `\p{...}` are
    /// refused. (`\b` and `\B` are assertions, read by `term`.)
    fn atom_escape(&mut self) -> Result<ClassAtom, PatternError> {
        let start = self.at;
        match self.peek_at(1) {
            Some('1'..='9') => Err(self.unsupported(start, "a backreference")),
            Some('k') => Err(self.unsupported(start, "a backreference")),
            _ => self.escape(false),
        }
    }

    /// An escape, `\` first, inside a class or out of one (inside, `\b` is U+0008 and `\-` is `-`).
    fn escape(&mut self, in_class: bool) -> Result<ClassAtom, PatternError> {
        let start = self.at;
        let invalid = |what| PatternError::Invalid { at: start, what };
        self.at += 1;
        let Some(c) = self.peek() else {
            return Err(invalid("\\ at end of pattern"));
        };
        self.at += 1;
        let atom = match c {
            'd' => ClassAtom::Set(digits()),
            'D' => ClassAtom::Set(complement(&digits())),
            'w' => ClassAtom::Set(word()),
            'W' => ClassAtom::Set(complement(&word())),
            's' => ClassAtom::Set(space()),
            'S' => ClassAtom::Set(complement(&space())),
            'p' | 'P' => return Err(self.unsupported(start, "a Unicode property escape")),
            'f' => ClassAtom::Char(0x0C),
            'n' => ClassAtom::Char(0x0A),
            'r' => ClassAtom::Char(0x0D),
            't' => ClassAtom::Char(0x09),
            'v' => ClassAtom::Char(0x0B),
            'b' if in_class => ClassAtom::Char(0x08),
            '-' if in_class => ClassAtom::Char(u32::from('-')),
            'c' => match self.peek() {
                Some(letter) if letter.is_ascii_alphabetic() => {
                    self.at += 1;
                    ClassAtom::Char(u32::from(letter) % 32)
                }
                _ => return Err(invalid("invalid unicode escape")),
            },
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => ClassAtom::Char(0),
            '0'..='9' => return Err(invalid("invalid decimal escape")),
            'x' => match self.hex(2) {
                Some(value) => ClassAtom::Char(value),
                None => return Err(invalid("invalid escape")),
            },
            'u' => match self.unicode_escape() {
                Some(value) => ClassAtom::Char(value),
                None => return Err(invalid("invalid unicode escape")),
            },
            '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|'
            | '/' => ClassAtom::Char(u32::from(c)),
            _ => return Err(invalid("invalid escape")),
        };
        Ok(atom)
    }

    /// Exactly `count` hex digits, consumed when they are there.
    fn hex(&mut self, count: usize) -> Option<u32> {
        let digits: String = self.chars.get(self.at..self.at + count)?.iter().collect();
        let value = u32::from_str_radix(&digits, 16).ok()?;
        digits.chars().all(|c| c.is_ascii_hexdigit()).then(|| {
            self.at += count;
            value
        })
    }

    /// After `\u`: `{H...}` or `HHHH`, a surrogate pair written as two escapes being one code point.
    fn unicode_escape(&mut self) -> Option<u32> {
        if self.eat('{') {
            let start = self.at;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.at += 1;
            }
            let digits: String = self.chars[start..self.at].iter().collect();
            let value = u32::from_str_radix(&digits, 16).ok().filter(|&v| v <= MAX);
            return value.filter(|_| self.eat('}'));
        }
        let lead = self.hex(4)?;
        if (0xD800..=0xDBFF).contains(&lead)
            && self.peek() == Some('\\')
            && self.peek_at(1) == Some('u')
        {
            let back = self.at;
            self.at += 2;
            match self.hex(4) {
                Some(trail @ 0xDC00..=0xDFFF) => {
                    return Some(0x10000 + ((lead - 0xD800) << 10) + (trail - 0xDC00))
                }
                _ => self.at = back,
            }
        }
        Some(lead)
    }

    /// `[...]` or `[^...]`: its set of code points.
    fn class(&mut self) -> Result<Set, PatternError> {
        let start = self.at;
        self.at += 1;
        let negated = self.eat('^');
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None => {
                    return Err(PatternError::Invalid {
                        at: start,
                        what: "unterminated character class",
                    })
                }
                Some(']') => {
                    self.at += 1;
                    break;
                }
                Some(_) => {}
            }
            let atom_start = self.at;
            let from = self.class_atom()?;
            let is_range = self.peek() == Some('-') && !matches!(self.peek_at(1), None | Some(']'));
            if !is_range {
                match from {
                    ClassAtom::Char(c) => ranges.push((c, c)),
                    ClassAtom::Set(set) => ranges.extend(set),
                }
                continue;
            }
            self.at += 1;
            let to = self.class_atom()?;
            match (from, to) {
                (ClassAtom::Char(lo), ClassAtom::Char(hi)) if lo <= hi => ranges.push((lo, hi)),
                (ClassAtom::Char(_), ClassAtom::Char(_)) => {
                    return Err(PatternError::Invalid {
                        at: atom_start,
                        what: "range out of order in character class",
                    })
                }
                _ => {
                    return Err(PatternError::Invalid {
                        at: atom_start,
                        what: "invalid character class",
                    })
                }
            }
        }
        let set = normalize(ranges);
        Ok(match negated {
            true => complement(&set),
            false => set,
        })
    }

    /// One atom of a class: a character, or an escape.
    fn class_atom(&mut self) -> Result<ClassAtom, PatternError> {
        match self.peek() {
            Some('\\') => {
                if self.peek_at(1) == Some('B') {
                    return Err(self.invalid("invalid class escape"));
                }
                self.escape(true)
            }
            Some(c) => {
                self.at += 1;
                Ok(ClassAtom::Char(u32::from(c)))
            }
            None => Err(self.invalid("unterminated character class")),
        }
    }
}
