//! JSON-RPC framing in front of rmcp on stdio. rmcp skips a line that is
//! not JSON and answers an invalid request without its `id`; JSON-RPC 2.0
//! §5 wants `-32700 Parse error` and `-32600 Invalid Request`, each with the
//! request's `id` (or `null`). Every line from the client is checked here:
//! a well-formed message goes on to rmcp, anything else is answered here,
//! and a line over the size limit is dropped unread. One writer task owns
//! stdout, so answers from both never interleave within a line.

use std::io;

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

/// What a client line is.
#[derive(Debug, PartialEq)]
enum Line {
    /// A JSON-RPC message for rmcp.
    Message,
    /// Nothing (blank line).
    Blank,
    /// An error answer to send back.
    Refused(Value),
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Checks one line (without its newline).
fn check(line: &[u8]) -> Line {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(_) => return Line::Refused(error(Value::Null, -32700, "Parse error: not JSON")),
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() { "batches are not part of MCP" } else { "not an object" };
        return Line::Refused(error(Value::Null, -32600, &format!("Invalid Request: {what}")));
    };
    let id = match object.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some(id.clone()),
        Some(_) => {
            return Line::Refused(error(
                Value::Null,
                -32600,
                "Invalid Request: id must be a string or number",
            ));
        }
    };
    let invalid = |what: &str| Line::Refused(error(id.clone().unwrap_or(Value::Null), -32600, what));
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("Invalid Request: jsonrpc must be \"2.0\"");
    }
    match object.get("method") {
        Some(Value::String(_)) => Line::Message,
        Some(_) => invalid("Invalid Request: method must be a string"),
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            Line::Message
        }
        None => invalid("Invalid Request: no method"),
    }
}

/// Copies `input` to `to_rmcp` line by line, answering bad lines through
/// `answers`. Ends at end of input, closing `to_rmcp` so rmcp ends too.
async fn screen(
    input: impl AsyncRead + Unpin,
    mut to_rmcp: impl AsyncWrite + Unpin,
    answers: mpsc::Sender<Vec<u8>>,
    max_line: usize,
) -> io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let (read, too_long) = read_line(&mut input, &mut line, max_line).await?;
        if read == 0 {
            break;
        }
        if too_long {
            let message = format!("Invalid Request: message over {max_line} bytes");
            tracing::warn!(max_line, "dropped an oversized message");
            let _ = answers.send(encode(&error(Value::Null, -32600, &message))).await;
            continue;
        }
        match check(&line) {
            Line::Message => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                to_rmcp.write_all(&line).await?;
            }
            Line::Blank => {}
            Line::Refused(answer) => {
                tracing::debug!(%answer, "refused a malformed message");
                let _ = answers.send(encode(&answer)).await;
            }
        }
    }
    to_rmcp.shutdown().await
}

/// Reads one line into `line`, keeping at most `max` bytes of it; the rest
/// of an oversized line is read and dropped. Returns the bytes read and
/// whether the line was too long.
async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<(usize, bool)> {
    let mut read = 0;
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok((read, too_long));
        }
        let (chunk, done) = match memchr(buffer) {
            Some(i) => (&buffer[..=i], true),
            None => (buffer, false),
        };
        let n = chunk.len();
        if !too_long && line.len() + n <= max {
            line.extend_from_slice(chunk);
        } else if !too_long {
            too_long = true;
            line.clear();
        }
        input.consume(n);
        read += n;
        if done {
            return Ok((read, too_long));
        }
    }
}

fn memchr(buffer: &[u8]) -> Option<usize> {
    buffer.iter().position(|b| *b == b'\n')
}

fn encode(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).expect("a JSON value serialises");
    bytes.push(b'\n');
    bytes
}

/// Copies rmcp's output lines to `answers`.
async fn relay(from_rmcp: impl AsyncRead + Unpin, answers: mpsc::Sender<Vec<u8>>) -> io::Result<()> {
    let mut lines = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        if lines.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        if answers.send(line).await.is_err() {
            return Ok(());
        }
    }
}

/// Writes every answer line to `output`, flushing each.
async fn write(mut output: impl AsyncWrite + Unpin, mut answers: mpsc::Receiver<Vec<u8>>) -> io::Result<()> {
    while let Some(line) = answers.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

/// Serves `server` to the client on `input` and `output`, every line
/// screened; returns once the client has left and every answer is written.
pub async fn serve<S: rmcp::ServerHandler>(
    server: S,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    max_line: usize,
) -> io::Result<()> {
    use rmcp::ServiceExt as _;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (answers, queue) = mpsc::channel(64);
    let screening = tokio::spawn(screen(input, to_rmcp, answers.clone(), max_line));
    let relaying = tokio::spawn(relay(from_rmcp, answers));
    let writing = tokio::spawn(write(output, queue));
    let served = match server.serve((rmcp_in, rmcp_out)).await {
        Ok(service) => service.waiting().await.map(drop).map_err(io::Error::other),
        Err(e) => Err(io::Error::other(e)),
    };
    // rmcp ended (the client left, or the handshake failed): stop reading
    // the client, then let the writer drain what is queued.
    screening.abort();
    relaying.await.map_err(io::Error::other)??;
    writing.await.map_err(io::Error::other)??;
    served
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> (i64, Value) {
        match check(line.as_bytes()) {
            Line::Refused(v) => (v["error"]["code"].as_i64().unwrap(), v["id"].clone()),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn lines_are_messages_or_errors_with_their_id() {
        assert_eq!(check(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Line::Message);
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Line::Message);
        assert_eq!(check(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Line::Message);
        assert_eq!(check(b"   "), Line::Blank);
        assert_eq!(refused("{this is not json"), (-32700, Value::Null));
        assert_eq!(refused("[1, 2"), (-32700, Value::Null));
        assert_eq!(refused("[1, 2]"), (-32600, Value::Null));
        assert_eq!(refused("42"), (-32600, Value::Null));
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":91,"method":42}"#), (-32600, json!(91)));
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":93}"#), (-32600, json!(93)));
        assert_eq!(refused(r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#), (-32600, json!("x")));
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#), (-32600, Value::Null));
    }

    #[tokio::test]
    async fn oversized_lines_are_dropped_and_the_next_one_is_read() {
        let input = format!("{}\n{}\n", "x".repeat(100), r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let mut reader = BufReader::with_capacity(16, input.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line(&mut reader, &mut line, 50).await.unwrap(), (101, true));
        line.clear();
        let (_, too_long) = read_line(&mut reader, &mut line, 50).await.unwrap();
        assert!(!too_long);
        assert_eq!(check(&line), Line::Message);
    }
}
