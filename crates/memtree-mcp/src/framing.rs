//! JSON-RPC framing on stdio, in front of rmcp. Every line from the client
//! is screened here and handed to rmcp as a parsed message, or answered
//! here, or dropped:
//!
//! - JSON-RPC 2.0 wants every request that has an `id` answered with that
//!   id, and no notification answered. rmcp answers some malformed requests
//!   without their id (an id of `1.5` or 2^64, `params` that is no object,
//!   a lone surrogate in an argument) or as an unknown method (a
//!   `tools/call` whose `arguments` is no object): those are answered here,
//!   `-32600` for a bad envelope, `-32602` naming the bad parameter, with
//!   the request's own id (as written, byte for byte).
//! - Cancellation is not honoured: a `notifications/cancelled` is dropped,
//!   so every request is carried out whole and answered (a write that was
//!   sent is applied, never half-applied or silently unanswered).
//! - Backpressure: at most [`IN_FLIGHT`] requests are handed to rmcp before
//!   their answers are written. A client that stops reading its stdout
//!   stops the server from reading its stdin, instead of answers piling up
//!   in memory.
//!
//! One writer task owns stdout, so answers never interleave within a line.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, JsonRpcMessage, NumberOrString};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// Requests handed to rmcp whose answers are not written yet.
pub const IN_FLIGHT: usize = 16;

/// What a client line is.
#[derive(Debug)]
enum Screened {
    /// A message for rmcp; a request also says under which key its answer
    /// will come back.
    Forward { message: Box<RxJsonRpcMessage<RoleServer>>, answer: Option<String> },
    /// An error answer to send back, as a line.
    Answer(Vec<u8>),
    /// Nothing to do or to answer (a blank line, a notification).
    Drop(&'static str),
}

/// An error answer, with the id exactly as the client wrote it when it is a
/// number or a string (even one rmcp cannot take), else `null`.
fn error(id: Option<&RawValue>, code: i64, message: &str) -> Screened {
    let id = id.filter(|id| matches!(kind(id), "number" | "string")).map_or("null", RawValue::get);
    let error = serde_json::json!({ "code": code, "message": message });
    Screened::Answer(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes())
}

/// The top-level members of a message, unparsed, and the first repeated key.
#[derive(Default)]
struct Envelope<'a> {
    members: HashMap<String, &'a RawValue>,
    repeated: Option<String>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'a>, A::Error> {
                let mut envelope = Envelope::default();
                while let Some(key) = map.next_key::<String>()? {
                    let value: &'de RawValue = map.next_value()?;
                    match envelope.members.entry(key) {
                        std::collections::hash_map::Entry::Occupied(taken) => {
                            envelope.repeated.get_or_insert_with(|| taken.key().clone());
                        }
                        std::collections::hash_map::Entry::Vacant(free) => {
                            free.insert(value);
                        }
                    }
                }
                Ok(envelope)
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// The JSON type a raw value starts with.
fn kind(value: &RawValue) -> &'static str {
    match value.get().trim_start().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// The MCP methods rmcp knows: a request for one of them that rmcp reads
/// as an unknown method had parameters of the wrong shape.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Checks one line (without its newline).
fn screen_line(line: &[u8]) -> Screened {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Screened::Drop("a blank line");
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return error(None, -32700, "Parse error: not UTF-8");
    };
    // One pass over the line for its members; whether it is JSON at all is
    // asked only of a line that is no object.
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(_) if serde_json::from_str::<&RawValue>(text).is_err() => {
            return error(None, -32700, "Parse error: not JSON");
        }
        Err(_) if text.trim_start().starts_with('[') => {
            return error(None, -32600, "Invalid Request: batches are not part of MCP");
        }
        Err(_) => return error(None, -32600, "Invalid Request: not an object"),
    };
    let member = |key: &str| envelope.members.get(key).copied();
    let Some(id) = member("id") else {
        return notification(text, member("method"));
    };
    if serde_json::from_str::<NumberOrString>(id.get()).is_err() {
        return error(Some(id), -32600, "Invalid Request: id must be a string or an integer");
    }
    if let Some(key) = &envelope.repeated {
        return error(Some(id), -32600, &format!("Invalid Request: the key {key:?} appears twice"));
    }
    if member("jsonrpc").map(RawValue::get) != Some("\"2.0\"") {
        return error(Some(id), -32600, "Invalid Request: jsonrpc must be \"2.0\"");
    }
    let Some(method) = member("method") else {
        if member("result").is_some() || member("error").is_some() {
            // The client's answer to a request of ours: never answered.
            return match serde_json::from_str(text) {
                Ok(message) => Screened::Forward { message: Box::new(message), answer: None },
                Err(_) => Screened::Drop("a malformed response"),
            };
        }
        return error(Some(id), -32600, "Invalid Request: no method");
    };
    let Ok(method) = serde_json::from_str::<String>(method.get()) else {
        return error(Some(id), -32600, "Invalid Request: method must be a string");
    };
    let params = member("params");
    if let Some(params) = params.filter(|p| kind(p) != "object") {
        return error(
            Some(id),
            -32602,
            &format!("Invalid params: params must be an object, not {}", kind(params)),
        );
    }
    // rmcp reads the parameters first: a request it takes as what it says
    // it is has none of the problems `params_problem` names (each makes
    // rmcp's parse fail or read the request as an unknown method), so
    // they are looked for only when it does not.
    let parsed = serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text);
    let misread = match &parsed {
        Ok(JsonRpcMessage::Request(request)) => {
            matches!(request.request, ClientRequest::CustomRequest(_))
                && KNOWN_METHODS.contains(&method.as_str())
        }
        Ok(_) => false,
        Err(_) => true,
    };
    if misread && let Some(problem) = params.and_then(|p| params_problem(&method, p)) {
        return error(Some(id), -32602, &format!("Invalid params: {problem}"));
    }
    match parsed {
        Ok(_) if misread => {
            error(Some(id), -32602, &format!("Invalid params: not the parameters of {method}"))
        }
        Ok(message) => {
            let answer = match &message {
                JsonRpcMessage::Request(request) => Some(answer_key(&request.id)),
                _ => None,
            };
            Screened::Forward { message: Box::new(message), answer }
        }
        Err(e) => error(Some(id), -32602, &format!("Invalid params: {e}")),
    }
}

/// What is wrong with the parameters of a method, where it can be named:
/// a `tools/call` needs a tool name and an object of arguments, each of
/// which must be readable (a lone surrogate is not text).
fn params_problem(method: &str, params: &RawValue) -> Option<String> {
    if method != "tools/call" {
        return None;
    }
    let members: HashMap<String, &RawValue> = serde_json::from_str(params.get()).ok()?;
    match members.get("name") {
        Some(name) if serde_json::from_str::<String>(name.get()).is_ok() => {}
        Some(name) if kind(name) == "string" => return Some("name is not text".to_owned()),
        Some(name) => return Some(format!("name must be a string, not {}", kind(name))),
        None => return Some("name is missing".to_owned()),
    }
    let arguments = members.get("arguments").filter(|a| kind(a) != "null")?;
    if kind(arguments) != "object" {
        return Some(format!("arguments must be an object, not {}", kind(arguments)));
    }
    let Ok(arguments) = serde_json::from_str::<HashMap<String, &RawValue>>(arguments.get()) else {
        return Some("an argument name is not text".to_owned());
    };
    let mut names: Vec<&String> = arguments.keys().collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let error = serde_json::from_str::<serde_json::Value>(arguments[name].get()).err()?;
        Some(format!("argument {name}: {error}"))
    })
}

/// A message without an id: a notification, never answered. A
/// cancellation is dropped: every request is carried out and answered.
fn notification(text: &str, method: Option<&RawValue>) -> Screened {
    if method.map(RawValue::get) == Some("\"notifications/cancelled\"") {
        return Screened::Drop("a cancellation (every request is carried out and answered)");
    }
    match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message @ JsonRpcMessage::Notification(_)) => {
            Screened::Forward { message: Box::new(message), answer: None }
        }
        _ => Screened::Drop("a malformed notification"),
    }
}

/// The key under which the answer to a request comes back: its id, as
/// rmcp writes it.
fn answer_key(id: &NumberOrString) -> String {
    serde_json::to_string(id).expect("an id serialises")
}

/// The requests handed to rmcp and not answered yet, each holding one of
/// [`IN_FLIGHT`] slots until its answer is written.
struct InFlight {
    slots: Arc<Semaphore>,
    held: Mutex<HashMap<String, Vec<OwnedSemaphorePermit>>>,
}

impl InFlight {
    fn new() -> InFlight {
        InFlight { slots: Arc::new(Semaphore::new(IN_FLIGHT)), held: Mutex::default() }
    }

    /// Waits for a free slot, and holds it for the request `key`.
    async fn start(&self, key: String) {
        let permit = Arc::clone(&self.slots).acquire_owned().await.expect("the semaphore is never closed");
        self.held.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default().push(permit);
    }

    /// The request `key` is answered: its slot is free again.
    fn finish(&self, key: &str) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(permits) = held.get_mut(key) {
            permits.pop();
            if permits.is_empty() {
                held.remove(key);
            }
        }
    }
}

/// A line for the client: rmcp's message, or one of the screen's answers.
enum Outgoing {
    Message(Box<TxJsonRpcMessage<RoleServer>>),
    Line(Vec<u8>),
}

/// rmcp's side of the framing: parsed messages in, messages out.
struct Channels {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    outgoing: mpsc::Sender<Outgoing>,
}

impl rmcp::transport::Transport<RoleServer> for Channels {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            outgoing
                .send(Outgoing::Message(Box::new(item)))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client's output is closed"))
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        Ok(())
    }
}

/// Reads the client's lines, hands messages to rmcp and answers the rest.
/// Ends at end of input, which closes rmcp's input too.
async fn screen(
    input: impl AsyncRead + Unpin,
    to_rmcp: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    answers: mpsc::Sender<Outgoing>,
    in_flight: Arc<InFlight>,
    max_line: usize,
) -> io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        // What a message left unanswered (a notification) rang is not kept
        // until the next answer.
        memtree_core::doorbell::release_rings();
        let (read, too_long) = read_line(&mut input, &mut line, max_line).await?;
        if read == 0 {
            return Ok(());
        }
        let screened = if too_long {
            tracing::warn!(max_line, "dropped an oversized message");
            error(None, -32600, &format!("Invalid Request: message over {max_line} bytes"))
        } else {
            screen_line(&line)
        };
        match screened {
            Screened::Forward { message, answer } => {
                if let Some(key) = answer {
                    in_flight.start(key).await;
                }
                if to_rmcp.send(*message).await.is_err() {
                    return Ok(());
                }
            }
            Screened::Answer(answer) => {
                tracing::debug!(answer = %String::from_utf8_lossy(&answer), "refused a malformed message");
                if answers.send(Outgoing::Line(answer)).await.is_err() {
                    return Ok(());
                }
            }
            Screened::Drop(what) => tracing::debug!("dropped {what}"),
        }
    }
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
        let (chunk, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(i) => (&buffer[..i], true),
            None => (buffer, false),
        };
        let n = chunk.len() + usize::from(done);
        if !too_long && line.len() + chunk.len() <= max {
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

/// Writes every answer as one line, flushing each; an answer written frees
/// its request's slot.
async fn write(
    mut output: impl AsyncWrite + Unpin,
    mut answers: mpsc::Receiver<Outgoing>,
    in_flight: Arc<InFlight>,
) -> io::Result<()> {
    while let Some(answer) = answers.recv().await {
        let (mut bytes, answered) = match answer {
            Outgoing::Line(bytes) => (bytes, None),
            Outgoing::Message(message) => {
                let answered = match &*message {
                    JsonRpcMessage::Response(r) => Some(answer_key(&r.id)),
                    JsonRpcMessage::Error(e) => e.id.as_ref().map(answer_key),
                    _ => None,
                };
                let mut bytes = serde_json::to_vec(&message).map_err(io::Error::other)?;
                bytes.push(b'\n');
                (bytes, answered)
            }
        };
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        output.write_all(&bytes).await?;
        output.flush().await?;
        memtree_core::doorbell::release_rings();
        if let Some(key) = answered {
            in_flight.finish(&key);
        }
    }
    Ok(())
}

/// Serves `server` to the client on `input` and `output`, every line
/// screened, calling `ready` once the handshake is done; returns once the
/// client has left and every answer is written.
pub async fn serve<S: rmcp::ServerHandler>(
    server: S,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    max_line: usize,
    ready: impl FnOnce(),
) -> io::Result<()> {
    use rmcp::ServiceExt as _;
    // On one thread, every engine call and every answer is on this one:
    // the background threads a write rings for are woken once its answer
    // is written (see `memtree_core::doorbell`).
    if tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
        memtree_core::doorbell::hold_rings();
    }
    let (to_rmcp, incoming) = mpsc::channel(IN_FLIGHT);
    let (answers, queue) = mpsc::channel(IN_FLIGHT);
    let in_flight = Arc::new(InFlight::new());
    let screening = tokio::spawn(screen(input, to_rmcp, answers.clone(), Arc::clone(&in_flight), max_line));
    let writing = tokio::spawn(write(output, queue, in_flight));
    let served = match server.serve(Channels { incoming, outgoing: answers }).await {
        Ok(service) => {
            ready();
            service.waiting().await.map(drop).map_err(io::Error::other)
        }
        Err(e) => Err(io::Error::other(e)),
    };
    // rmcp ended (the client left, or the handshake failed): stop reading
    // the client, then let the writer drain what is queued.
    screening.abort();
    writing.await.map_err(io::Error::other)??;
    served
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code and the id (as written) of an answer, or what else it is.
    fn answered(line: &str) -> (i64, String) {
        match screen_line(line.as_bytes()) {
            Screened::Answer(bytes) => {
                let text = String::from_utf8(bytes).unwrap();
                let id_start = text.find("\"id\":").unwrap() + 5;
                let id_end = text.find(",\"error\"").unwrap();
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                (value["error"]["code"].as_i64().unwrap(), text[id_start..id_end].to_owned())
            }
            other => panic!("{line}: {other:?}"),
        }
    }

    fn forwarded(line: &str) -> Option<String> {
        match screen_line(line.as_bytes()) {
            Screened::Forward { answer, .. } => answer,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn dropped(line: &str) -> bool {
        matches!(screen_line(line.as_bytes()), Screened::Drop(_))
    }

    #[test]
    fn well_formed_messages_go_to_rmcp_with_their_answer_key() {
        assert_eq!(forwarded(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).as_deref(), Some("1"));
        assert_eq!(
            forwarded(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#).as_deref(),
            Some("\"a\"")
        );
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_document","arguments":{}}}"#;
        assert_eq!(forwarded(call).as_deref(), Some("7"));
        assert_eq!(forwarded(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), None);
        assert_eq!(forwarded(r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#), None);
    }

    #[test]
    fn malformed_requests_are_answered_with_their_own_id() {
        let cases = [
            ("{this is not json", (-32700, "null")),
            ("[1, 2", (-32700, "null")),
            ("[1, 2]", (-32600, "null")),
            ("42", (-32600, "null")),
            (r#"{"jsonrpc":"2.0","id":91,"method":42}"#, (-32600, "91")),
            (r#"{"jsonrpc":"2.0","id":93}"#, (-32600, "93")),
            (r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#, (-32600, "\"x\"")),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, (-32600, "null")),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, (-32600, "1.5")),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#,
                (-32600, "18446744073709551616"),
            ),
            (r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"ping"}"#, (-32600, "3")),
            (r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":"x"}"#, (-32602, "5")),
            (r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1,2]}"#, (-32602, "6")),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search","arguments":[1]}}"#,
                (-32602, "8"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":{"q":"\ud800"}}}"#,
                (-32602, "9"),
            ),
            (r#"{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{}}"#, (-32602, "10")),
        ];
        for (line, (code, id)) in cases {
            assert_eq!(answered(line), (code, id.to_owned()), "{line}");
        }
    }

    #[test]
    fn notifications_are_never_answered_and_cancellations_are_dropped() {
        assert!(dropped(r#"{"jsonrpc":"2.0","method":42}"#));
        assert!(dropped(r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}"#));
        assert!(dropped(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#));
        assert!(dropped("   "));
    }

    /// rmcp's parse comes first; what is wrong is still named, each case
    /// as it was when the parameters were looked at before it.
    #[test]
    fn the_bad_argument_is_named() {
        let call =
            |params: &str| format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{params}}}"#);
        let cases = [
            (r#"{"name":"x","arguments":{"ok":"a","q":"\ud800"}}"#, "Invalid params: argument q: "),
            (r#"{"arguments":{}}"#, "Invalid params: name is missing"),
            (r#"{"name":7}"#, "Invalid params: name must be a string, not number"),
            (r#"{"name":"\udc00"}"#, "Invalid params: name is not text"),
            (r#"{"name":"x","arguments":"q"}"#, "Invalid params: arguments must be an object, not string"),
            (r#"{"name":"x","arguments":{"\ud800":1}}"#, "Invalid params: an argument name is not text"),
        ];
        for (params, said) in cases {
            let line = call(params);
            let Screened::Answer(bytes) = screen_line(line.as_bytes()) else {
                panic!("{line} was not answered")
            };
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.contains(said), "{line}: {text}");
        }
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
        assert_eq!(forwarded(std::str::from_utf8(&line).unwrap()).as_deref(), Some("1"));
    }

    #[tokio::test]
    async fn a_request_waits_for_a_slot_until_an_answer_is_written() {
        let in_flight = InFlight::new();
        for i in 0..IN_FLIGHT {
            in_flight.start(i.to_string()).await;
        }
        let blocked =
            tokio::time::timeout(std::time::Duration::from_millis(50), in_flight.start("x".into())).await;
        assert!(blocked.is_err(), "all slots are taken");
        in_flight.finish("3");
        tokio::time::timeout(std::time::Duration::from_secs(1), in_flight.start("x".into())).await.unwrap();
    }
}
