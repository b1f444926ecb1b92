//! Every human-readable line a session produces (`ddbx: …`), passed on to the embedding as it
//! comes and kept, in order, for the [`super::Outcome`].

use super::OnEvent;
use super::events::SessionEvent;

/// The session's lines so far, and where each goes as it comes.
pub(super) struct Transcript {
    on_message: Box<dyn FnMut(&str) + Send>,
    on_event: Option<OnEvent>,
    lines: Vec<String>,
}

impl Transcript {
    /// An empty transcript that hands each line to `on_message` and each event to `on_event`.
    pub(super) fn new(
        on_message: Box<dyn FnMut(&str) + Send>,
        on_event: Option<OnEvent>,
    ) -> Transcript {
        Transcript {
            on_message,
            on_event,
            lines: Vec::new(),
        }
    }

    /// Hands one event to the embedding (events are not kept).
    pub(super) fn event(&mut self, event: &SessionEvent) {
        if let Some(on_event) = self.on_event.as_mut() {
            on_event(event);
        }
    }

    /// Shows one line and keeps it.
    pub(super) fn say(&mut self, line: String) {
        (self.on_message)(&line);
        self.lines.push(line);
    }

    /// Whether this line was said already.
    pub(super) fn contains(&self, line: &str) -> bool {
        self.lines.iter().any(|l| l == line)
    }

    /// The lines, in order.
    pub(super) fn into_lines(self) -> Vec<String> {
        self.lines
    }
}
