//! A term's postings as searches keep them: every instance of the term,
//! compact. An instance in a `Vec` takes eight bytes; here a passage takes
//! its distance from the one before and its count of instances, and each
//! instance its position's distance from the one before in the same
//! column, with the column: about three bytes an instance. So the bound of
//! the postings kept between searches holds nearly three times the words,
//! and a store of 10,000 documents keeps its searched words in a third of
//! the memory. Every 32 passages, a skip entry lets a cursor jump.

/// Where one term occurs: a passage (its rowid), a column, the term's
/// position in that column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
    rowid: u32,
    /// The column in the top 8 bits, the position below (positions past
    /// 2^24 count as the last).
    at: u32,
}

impl Instance {
    pub fn new(rowid: u32, column: u8, offset: u32) -> Instance {
        Instance { rowid, at: u32::from(column) << 24 | offset.min(0xFF_FFFF) }
    }

    #[cfg(test)]
    pub fn rowid(self) -> i64 {
        i64::from(self.rowid)
    }

    pub fn column(self) -> u8 {
        (self.at >> 24) as u8
    }

    pub fn offset(self) -> u32 {
        self.at & 0xFF_FFFF
    }
}

/// Passages a skip entry covers.
const BLOCK: usize = 32;

/// Every instance of one term, in passage order; `df` is the number of
/// passages holding it.
#[derive(Debug, Default, Clone)]
pub struct Postings {
    /// Each passage: `varint(gap << 2 | min(count, 4) - 1)`, where `gap` is
    /// its rowid less the one before's (0 before the first), then
    /// `varint(count - 4)` if it holds four or more, then each instance as
    /// `varint(distance << 3 | column)`, the distance from the instance
    /// before if that one is in the same column, else from 0.
    bytes: Vec<u8>,
    /// The first passage of every [`BLOCK`]: its rowid, the rowid before
    /// it, and where it begins in `bytes`.
    skips: Vec<Skip>,
    df: usize,
    /// The rowid of the last passage.
    last: u32,
}

#[derive(Debug, Clone, Copy)]
struct Skip {
    rowid: u32,
    before: u32,
    at: u32,
}

impl Postings {
    /// `instances` in passage, column, position order.
    #[cfg(test)]
    pub fn new(instances: Vec<Instance>) -> Postings {
        let mut postings = Postings::default();
        for run in instances.chunk_by(|a, b| a.rowid == b.rowid) {
            postings.push(run);
        }
        postings.shrink_to_fit();
        postings
    }

    /// Gives back the room left over from coding.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.skips.shrink_to_fit();
    }

    pub fn df(&self) -> usize {
        self.df
    }

    /// The memory the postings take, in bytes.
    pub fn size(&self) -> usize {
        self.bytes.capacity() + self.skips.capacity() * size_of::<Skip>()
    }

    /// The rowid of the first passage, if any.
    pub fn first(&self) -> Option<u32> {
        self.skips.first().map(|skip| skip.rowid)
    }

    /// The rowid of the last passage (0 if none).
    pub fn last(&self) -> u32 {
        self.last
    }

    /// The passages as coded, the first one's rowid whole: what
    /// [`Postings::append_coded`] takes back.
    pub fn coded(&self) -> &[u8] {
        &self.bytes
    }

    /// Adds a passage's instances (one passage, in column and position
    /// order), after the last passage held.
    pub fn push(&mut self, passage: &[Instance]) {
        let Some(first) = passage.first() else { return };
        self.begin(first.rowid, passage.len());
        let mut before: Option<Instance> = None;
        for instance in passage {
            let base = match before {
                Some(b) if b.column() == instance.column() => b.offset(),
                _ => 0,
            };
            varint(&mut self.bytes, u64::from(instance.offset() - base) << 3 | u64::from(instance.column()));
            before = Some(*instance);
        }
    }

    /// Appends the passages of `coded` (as [`Postings::coded`] gives them)
    /// that `keep` takes by rowid, after the last passage held. An
    /// instance is coded apart from the passages around it, so each kept
    /// passage's instances are copied as they are.
    pub fn append_coded(&mut self, coded: &[u8], mut keep: impl FnMut(u32) -> bool) {
        let (mut at, mut rowid) = (0, 0u32);
        while at < coded.len() {
            let (gap, count) = read_head(coded, &mut at);
            rowid += gap;
            let start = at;
            skip_varints(coded, &mut at, count);
            if keep(rowid) {
                self.begin(rowid, count);
                self.bytes.extend_from_slice(&coded[start..at.min(coded.len())]);
            }
        }
    }

    /// Starts passage `rowid` of `count` instances: its skip entry if it
    /// begins a block, and its head.
    fn begin(&mut self, rowid: u32, count: usize) {
        debug_assert!(self.df == 0 || rowid > self.last, "passages come in order");
        if self.df.is_multiple_of(BLOCK) {
            let at = u32::try_from(self.bytes.len()).unwrap_or(u32::MAX);
            self.skips.push(Skip { rowid, before: self.last, at });
        }
        head_of(&mut self.bytes, rowid - self.last, count);
        self.last = rowid;
        self.df += 1;
    }

    /// Drops passage `rowid`'s instances. The bytes after it move down and
    /// the passage after it takes its gap: its head is the one part written
    /// again. (Decoding and coding again every passage after it, for every
    /// term a write's old passages were looked for in, made the first
    /// search after a write take tens of milliseconds.) A block may hold
    /// fewer than [`BLOCK`] passages after this; a cursor needs only that
    /// each skip entry names a passage's start.
    pub fn remove(&mut self, rowid: i64) {
        let Some(block) = self.skips.partition_point(|s| i64::from(s.rowid) <= rowid).checked_sub(1) else {
            return;
        };
        let skip = self.skips[block];
        let block_end = self.skips.get(block + 1).map_or(self.bytes.len(), |s| s.at as usize);
        // The passage and the rowid before it, looked for in its block.
        let (mut at, mut before) = (skip.at as usize, skip.before);
        let (start, end) = loop {
            if at >= block_end {
                return;
            }
            let start = at;
            let (gap, count) = read_head(&self.bytes, &mut at);
            skip_varints(&self.bytes, &mut at, count);
            match i64::from(before + gap).cmp(&rowid) {
                std::cmp::Ordering::Less => before += gap,
                std::cmp::Ordering::Equal => break (start, at),
                std::cmp::Ordering::Greater => return,
            }
        };
        // The next passage, if any, is coded from the passage before the
        // one dropped: its head is written again with the two gaps summed.
        let next = (end < self.bytes.len()).then(|| {
            let mut head_end = end;
            let (gap, count) = read_head(&self.bytes, &mut head_end);
            (rowid as u32 + gap, count, head_end)
        });
        let (replaced_end, head) = match next {
            Some((next_rowid, count, head_end)) => {
                let mut head = Vec::new();
                head_of(&mut head, next_rowid - before, count);
                (head_end, head)
            }
            None => (end, Vec::new()),
        };
        let moved = start + head.len();
        let delta = moved as i64 - replaced_end as i64;
        self.bytes.splice(start..replaced_end, head);
        let next_starts_block = self.skips.get(block + 1).is_some_and(|s| s.at as usize == end);
        for later in &mut self.skips[block + 1..] {
            later.at = (i64::from(later.at) + delta) as u32;
        }
        if next_starts_block {
            // The next block's first passage now begins where the dropped
            // one did, after the passage before it.
            let following = &mut self.skips[block + 1];
            (following.at, following.before) = (start as u32, before);
        }
        if skip.at as usize == start {
            match next {
                Some((next_rowid, ..)) if !next_starts_block => self.skips[block].rowid = next_rowid,
                _ => {
                    self.skips.remove(block);
                }
            }
        }
        self.df -= 1;
        if next.is_none() {
            self.last = before;
        }
    }

    /// A cursor over the passages, to look them up in passage order.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor { postings: self, block: 0, at: 0, before: 0, buffer: Vec::new(), seen: None }
    }
}

/// Reads a term's passages in order, or looks them up by rowid in passage
/// order, each from where the last was found: by galloping over the skip
/// entries, so that looking up a few passages in a long list costs a few
/// steps each, and many passages no more than one walk through it.
pub(crate) struct Cursor<'a> {
    postings: &'a Postings,
    /// The block of the next passage.
    block: usize,
    /// Where the next passage begins, and the rowid before it.
    at: usize,
    before: u32,
    buffer: Vec<Instance>,
    /// The rowid of the passage last read, whose instances `buffer` holds.
    seen: Option<u32>,
}

impl Cursor<'_> {
    /// The next passage's instances.
    #[cfg(test)]
    pub(crate) fn next_passage(&mut self) -> Option<&[Instance]> {
        let (rowid, count) = self.next_head()?;
        self.decode(rowid, count);
        Some(&self.buffer)
    }

    /// The next passage's rowid, with `column` called on each of its
    /// instances' columns: all that a term's weight in a passage needs,
    /// read without decoding the positions.
    pub(crate) fn next_columns(&mut self, mut column: impl FnMut(u8)) -> Option<i64> {
        let (rowid, count) = self.next_head()?;
        let bytes = &self.postings.bytes;
        for _ in 0..count {
            // A varint's first byte holds its low seven bits, the column's
            // three among them.
            column(bytes.get(self.at).map_or(0, |b| b & 7));
            skip_varint(bytes, &mut self.at);
        }
        self.passed(rowid);
        Some(i64::from(rowid))
    }

    /// The instances in passage `rowid` (not before the last looked up),
    /// if the term occurs there.
    pub(crate) fn seek(&mut self, rowid: i64) -> Option<&[Instance]> {
        if self.seen.is_some_and(|seen| i64::from(seen) == rowid) {
            return Some(&self.buffer);
        }
        // Ahead to the last block that begins at or before `rowid`:
        // galloping, then a binary search in the last stride.
        let skips = &self.postings.skips;
        let mut step = 1;
        while self.block + step < skips.len() && i64::from(skips[self.block + step].rowid) <= rowid {
            step *= 2;
        }
        let end = (self.block + step).min(skips.len());
        let ahead = skips[(self.block + 1).min(end)..end].partition_point(|s| i64::from(s.rowid) <= rowid);
        if ahead > 0 {
            self.block += ahead;
            let skip = skips[self.block];
            (self.at, self.before) = (skip.at as usize, skip.before);
        }
        // The passages before it are passed over, their instances not
        // decoded.
        loop {
            let at = (self.block, self.at, self.before);
            let (found, count) = self.next_head()?;
            match i64::from(found).cmp(&rowid) {
                std::cmp::Ordering::Less => {
                    skip_varints(&self.postings.bytes, &mut self.at, count);
                    self.passed(found);
                }
                std::cmp::Ordering::Equal => {
                    self.decode(found, count);
                    return Some(&self.buffer);
                }
                std::cmp::Ordering::Greater => {
                    // Not there: the passage is read again at the next seek.
                    (self.block, self.at, self.before) = at;
                    self.seen = None;
                    return None;
                }
            }
        }
    }

    /// The next passage's rowid and count of instances, which follow.
    fn next_head(&mut self) -> Option<(u32, usize)> {
        if self.at >= self.postings.bytes.len() {
            return None;
        }
        let (gap, count) = read_head(&self.postings.bytes, &mut self.at);
        self.seen = None;
        Some((self.before + gap, count))
    }

    /// Reads the `count` instances of passage `rowid` into the buffer.
    fn decode(&mut self, rowid: u32, count: usize) {
        let bytes = &self.postings.bytes;
        self.buffer.clear();
        let mut before: Option<Instance> = None;
        for _ in 0..count {
            let code = read_varint(bytes, &mut self.at);
            let column = (code & 7) as u8;
            let base = match before {
                Some(b) if b.column() == column => b.offset(),
                _ => 0,
            };
            let instance = Instance::new(rowid, column, base + (code >> 3) as u32);
            self.buffer.push(instance);
            before = Some(instance);
        }
        self.passed(rowid);
        self.seen = Some(rowid);
    }

    /// Passage `rowid` was read up to its end.
    fn passed(&mut self, rowid: u32) {
        self.before = rowid;
        if self.postings.skips.get(self.block + 1).is_some_and(|s| s.at as usize <= self.at) {
            self.block += 1;
        }
    }
}

/// Little-endian, seven bits a byte.
pub(crate) fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Codes a passage's head: its rowid's distance from the passage before,
/// and its count of instances.
fn head_of(out: &mut Vec<u8>, gap: u32, count: usize) {
    let count = count as u64;
    varint(out, u64::from(gap) << 2 | (count.min(4) - 1));
    if count >= 4 {
        varint(out, count - 4);
    }
}

/// `earlier` (coded postings whose last passage is `last`) with `later`
/// (coded, its passages all after `last`) after it, as one: only
/// `later`'s first head is coded again, from `last`, and nothing of
/// `earlier` is read.
pub fn join_coded(earlier: &[u8], last: u32, later: &[u8]) -> Vec<u8> {
    let mut at = 0;
    let (first, count) = read_head(later, &mut at);
    debug_assert!(earlier.is_empty() || first > last, "passages come in order");
    let mut out = Vec::with_capacity(earlier.len() + later.len());
    out.extend_from_slice(earlier);
    head_of(&mut out, first - if earlier.is_empty() { 0 } else { last }, count);
    out.extend_from_slice(&later[at..]);
    out
}

/// A passage's head: its rowid's distance from the passage before, and
/// its count of instances.
fn read_head(bytes: &[u8], at: &mut usize) -> (u32, usize) {
    let head = read_varint(bytes, at);
    let mut count = (head & 3) as usize + 1;
    if count == 4 {
        count += read_varint(bytes, at) as usize;
    }
    ((head >> 2) as u32, count)
}

/// Moves past one varint.
fn skip_varint(bytes: &[u8], at: &mut usize) {
    while bytes.get(*at).is_some_and(|b| *b >= 0x80) {
        *at += 1;
    }
    *at += 1;
}

/// Moves past `count` varints: a passage's instances, undecoded.
fn skip_varints(bytes: &[u8], at: &mut usize, count: usize) {
    for _ in 0..count {
        skip_varint(bytes, at);
    }
}

pub(crate) fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut n, mut shift) = (0u64, 0);
    while let Some(&byte) = bytes.get(*at) {
        *at += 1;
        n |= u64::from(byte & 0x7F) << shift;
        shift += 7;
        if byte < 0x80 {
            break;
        }
    }
    n
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pseudo-random sequence, fixed so that a failure repeats.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    /// Two codings joined are the coding of their passages together,
    /// whatever the earlier one ends with and the later one starts with.
    #[test]
    fn postings_joined_as_coded_are_the_postings_of_both() {
        let mut rng = Rng(11);
        for round in 0..200 {
            let count = rng.below(70) as usize;
            let first = 1 + rng.below(3) as u32;
            let all = passages(&mut rng, count, first);
            let cut = rng.below(count as u64 + 1) as usize;
            let (earlier, later) = (Postings::new(all[..cut].concat()), Postings::new(all[cut..].concat()));
            let whole = Postings::new(all.concat());
            if later.df() == 0 {
                continue;
            }
            let joined = join_coded(earlier.coded(), earlier.last(), later.coded());
            assert_eq!(joined, whole.coded(), "round {round}: {cut} of {count}");
        }
    }

    /// Passages with gaps near and far, up to six instances in several
    /// columns, positions up to the last one kept.
    fn passages(rng: &mut Rng, count: usize, first: u32) -> Vec<Vec<Instance>> {
        let mut rowid = first;
        (0..count)
            .map(|_| {
                rowid += 1 + if rng.below(10) == 0 { rng.below(100_000) } else { rng.below(3) } as u32;
                let mut at: Vec<(u8, u32)> = (0..1 + rng.below(6))
                    .map(|_| {
                        let offset = if rng.below(20) == 0 { 0xFF_FFFF } else { rng.below(3000) as u32 };
                        (rng.below(6) as u8, offset)
                    })
                    .collect();
                at.sort_unstable();
                at.dedup();
                at.into_iter().map(|(column, offset)| Instance::new(rowid, column, offset)).collect()
            })
            .collect()
    }

    fn all(postings: &Postings) -> Vec<Vec<Instance>> {
        let mut cursor = postings.cursor();
        let mut out = Vec::new();
        while let Some(passage) = cursor.next_passage() {
            out.push(passage.to_vec());
        }
        out
    }

    /// Each passage's rowid and its instances' columns, read without the
    /// positions.
    fn columns(postings: &Postings) -> Vec<(i64, Vec<u8>)> {
        let mut cursor = postings.cursor();
        let (mut out, mut columns) = (Vec::new(), Vec::new());
        while let Some(rowid) = cursor.next_columns(|column| columns.push(column)) {
            out.push((rowid, std::mem::take(&mut columns)));
        }
        out
    }

    fn expected_columns(passages: &[Vec<Instance>]) -> Vec<(i64, Vec<u8>)> {
        passages.iter().map(|p| (p[0].rowid(), p.iter().map(|i| i.column()).collect())).collect()
    }

    /// What is pushed reads back, passage by passage (whole, or its columns
    /// alone) and by seeking in order (near, far, and to rowids no passage
    /// has), and a removal or a push later leaves the rest as it was.
    #[test]
    fn postings_read_back_seek_and_change_as_a_list_would() {
        let mut rng = Rng(11);
        for round in 0..40 {
            let count = rng.below(300) as usize;
            let mut expected = passages(&mut rng, count, 0);
            let mut postings = Postings::new(expected.concat());
            for step in 0..6 {
                assert_eq!(all(&postings), expected, "round {round}, step {step}");
                assert_eq!(columns(&postings), expected_columns(&expected), "round {round}, step {step}");
                assert_eq!(postings.df(), expected.len());
                let mut cursor = postings.cursor();
                let mut target = 0i64;
                while target < expected.last().map_or(0, |p| p[0].rowid()) + 5 {
                    target += if rng.below(4) == 0 { rng.below(200_000) as i64 } else { rng.below(4) as i64 };
                    let want = expected.iter().find(|p| p[0].rowid() == target);
                    assert_eq!(cursor.seek(target), want.map(Vec::as_slice), "round {round}, seek {target}");
                    assert_eq!(cursor.seek(target), want.map(Vec::as_slice), "the same passage again");
                }
                // Remove passages (a run of neighbours at times, which
                // empties blocks; one that is not there), push some.
                for _ in 0..rng.below(12) {
                    if expected.is_empty() {
                        break;
                    }
                    let first = rng.below(expected.len() as u64) as usize;
                    let run = if rng.below(4) == 0 { 1 + rng.below(40) as usize } else { 1 };
                    for gone in expected.drain(first..(first + run).min(expected.len())).collect::<Vec<_>>() {
                        postings.remove(gone[0].rowid());
                    }
                    postings.remove(expected.get(first).map_or(0, |p| p[0].rowid() - 1).max(0));
                }
                postings.remove(-1);
                postings.remove(i64::from(u32::MAX));
                let last = expected.last().map_or(0, |p| p[0].rowid() as u32);
                let count = rng.below(40) as usize;
                for passage in passages(&mut rng, count, last) {
                    postings.push(&passage);
                    expected.push(passage);
                }
            }
        }
    }

    /// Three bytes an instance or so, where a `Vec` takes eight.
    #[test]
    fn postings_take_a_few_bytes_an_instance() {
        let mut rng = Rng(5);
        let passages = passages(&mut rng, 10_000, 0);
        let instances = passages.iter().map(Vec::len).sum::<usize>();
        let postings = Postings::new(passages.concat());
        assert!(postings.size() < 4 * instances, "{} bytes for {instances} instances", postings.size());
    }
}
