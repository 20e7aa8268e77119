//! Changes told to the pages open in browsers, as server-sent events: the
//! file watcher reports every document written (by this server, another
//! memtree process or an editor) and each open page decides whether what
//! it shows changed.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Where changed documents are announced; cheap to clone.
#[derive(Clone)]
pub struct Changes(broadcast::Sender<Arc<[String]>>);

impl Default for Changes {
    fn default() -> Changes {
        // A page that falls this far behind is told "anything may have
        // changed" rather than each id.
        Changes(broadcast::channel(64).0)
    }
}

impl Changes {
    /// `ids` changed (as the tools name them: `shared:` for the shared
    /// tree); none: anything may have.
    pub fn send(&self, ids: Vec<String>) {
        // No page open: nobody to tell.
        let _ = self.0.send(ids.into());
    }

    /// The `change` events from now on, each a JSON list of ids (`[]`:
    /// anything), until `stop`.
    pub(crate) fn stream(
        &self,
        stop: CancellationToken,
    ) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
        let receiver = self.0.subscribe();
        let events = futures_util::stream::unfold((receiver, stop), |(mut receiver, stop)| async move {
            let data = tokio::select! {
                () = stop.cancelled() => return None,
                received = receiver.recv() => match received {
                    Ok(ids) => serde_json::to_string(&*ids).expect("ids serialise"),
                    Err(broadcast::error::RecvError::Lagged(_)) => "[]".to_owned(),
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            };
            Some((Ok(Event::default().event("change").data(data)), (receiver, stop)))
        });
        Sse::new(events).keep_alive(KeepAlive::default())
    }
}
