//! Line endings as a document has them: `\n`, `\r\n` or a lone `\r`
//! (CommonMark's three), and a byte-order mark before the text.
//!
//! Every edit memtree makes to a stored text keeps the lines it does not
//! touch byte for byte and writes the lines it adds with the document's
//! own ending, so that a file from Windows or an old Mac editor stays as
//! its author's tools wrote it.

/// The byte-order mark some editors put at the start of a UTF-8 file.
pub const BOM: &str = "\u{feff}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    CrLf,
    Cr,
}

impl LineEnding {
    /// The ending most lines of `text` have (the first one seen on a tie);
    /// `\n` for a text without a line break.
    pub fn of(text: &str) -> LineEnding {
        let (mut lf, mut crlf, mut cr) = (0usize, 0usize, 0usize);
        for line in lines(text) {
            match ending(line) {
                "\n" => lf += 1,
                "\r\n" => crlf += 1,
                "\r" => cr += 1,
                _ => {}
            }
        }
        if crlf > lf && crlf >= cr {
            LineEnding::CrLf
        } else if cr > lf && cr > crlf {
            LineEnding::Cr
        } else {
            LineEnding::Lf
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
            LineEnding::Cr => "\r",
        }
    }

    /// `text` with every line break (of any kind) written as this ending.
    pub fn apply(self, text: &str) -> String {
        if self == LineEnding::Lf && !text.contains('\r') {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len() + text.len() / 16);
        for line in lines(text) {
            out.push_str(content(line));
            if !ending(line).is_empty() {
                out.push_str(self.as_str());
            }
        }
        out
    }
}

/// The lines of `text`, each with its ending (`\n`, `\r\n`, `\r`, or none
/// for a last line without one).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = next_line_start(rest, 0);
        let (line, after) = rest.split_at(end);
        rest = after;
        Some(line)
    })
}

/// Where the line after the one holding byte `from` starts: past its
/// ending, or the end of `text`.
pub fn next_line_start(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    match bytes[from..].iter().position(|b| matches!(b, b'\n' | b'\r')) {
        None => text.len(),
        Some(i) => {
            let at = from + i;
            if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') { at + 2 } else { at + 1 }
        }
    }
}

/// A line's ending: `"\n"`, `"\r\n"`, `"\r"` or `""`.
pub fn ending(line: &str) -> &str {
    if line.ends_with("\r\n") {
        &line[line.len() - 2..]
    } else if line.ends_with(['\n', '\r']) {
        &line[line.len() - 1..]
    } else {
        ""
    }
}

/// A line without its ending.
pub fn content(line: &str) -> &str {
    &line[..line.len() - ending(line).len()]
}

/// Whether `text` ends with a line break (an empty text counts as ended).
pub fn ends_with_break(text: &str) -> bool {
    text.is_empty() || text.ends_with(['\n', '\r'])
}

/// `text` with `line` added as its last line, written with the text's own
/// ending (and a break first when the text's last line has none).
pub fn append_line(text: &str, line: &str) -> String {
    let eol = LineEnding::of(text).as_str();
    let sep = if ends_with_break(text) { "" } else { eol };
    format!("{text}{sep}{line}{eol}")
}

/// Where each line starts, to turn byte offsets into 1-based line numbers
/// in logarithmic time (counting breaks before each offset would make
/// documents of many headings quadratic).
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        let mut at = 0;
        while at < text.len() {
            at = next_line_start(text, at);
            if at < text.len() {
                starts.push(at);
            } else if ends_with_break(text) {
                starts.push(at); // The empty line after a final break.
            }
        }
        LineIndex { starts }
    }

    /// The 1-based line that holds byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}

/// `text` as the Markdown parser should see it: each lone `\r` (an old
/// Mac line ending) as `\n`. pulldown-cmark takes a lone `\r` for a line
/// ending in most places but not after a code fence; the swap keeps every
/// byte offset, so ranges found in the copy hold in the original.
pub fn for_parser(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let lone = |i: usize| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n');
    if !(0..bytes.len()).any(lone) {
        return std::borrow::Cow::Borrowed(text);
    }
    let swapped: Vec<u8> = (0..bytes.len()).map(|i| if lone(i) { b'\n' } else { bytes[i] }).collect();
    std::borrow::Cow::Owned(
        String::from_utf8(swapped).expect("swapping one ASCII byte for another keeps UTF-8"),
    )
}

/// How many line breaks `text` holds.
pub fn count_breaks(text: &str) -> usize {
    lines(text).filter(|l| !ending(l).is_empty()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_own_endings() {
        let text = "a\r\nb\nc\rd";
        assert_eq!(lines(text).collect::<Vec<_>>(), ["a\r\n", "b\n", "c\r", "d"]);
        assert_eq!(lines(text).map(content).collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(lines("").count(), 0);
        assert_eq!(lines("\r\r\n").collect::<Vec<_>>(), ["\r", "\r\n"]);
        assert_eq!(count_breaks(text), 3);
    }

    #[test]
    fn the_dominant_ending_wins() {
        assert_eq!(LineEnding::of("a\r\nb\r\nc\n"), LineEnding::CrLf);
        assert_eq!(LineEnding::of("a\rb\r"), LineEnding::Cr);
        assert_eq!(LineEnding::of("a\nb\r\n"), LineEnding::Lf);
        assert_eq!(LineEnding::of("no break"), LineEnding::Lf);
        assert_eq!(LineEnding::CrLf.apply("a\nb\r\nc\rd"), "a\r\nb\r\nc\r\nd");
        assert_eq!(LineEnding::Cr.apply("a\n"), "a\r");
    }

    #[test]
    fn appending_uses_the_texts_ending() {
        assert_eq!(append_line("# a\r\nx", "- [[b]]"), "# a\r\nx\r\n- [[b]]\r\n");
        assert_eq!(append_line("# a\r", "- [[b]]"), "# a\r- [[b]]\r");
        assert_eq!(append_line("", "- [[b]]"), "- [[b]]\n");
    }

    #[test]
    fn line_numbers_of_offsets() {
        let text = "a\r\nb\rc\nd";
        let index = LineIndex::new(text);
        let got: Vec<usize> = (0..text.len()).map(|o| index.line(o)).collect();
        assert_eq!(got, [1, 1, 1, 2, 2, 3, 3, 4]);
        assert_eq!(LineIndex::new("x\n").line(2), 2);
    }
}
