//! The LD↔GD protocol: one RON message per line over the GD's Unix stream socket.
//!
//! Every LD opens its own connection when its process image starts (and again in each forked
//! child), says [`LdToGd::Hello`], and waits for [`GdToLd::Welcome`]. After that, the LD sends
//! one-way notes and, in replay, asks questions that the GD answers in order. Recording never
//! waits for the GD on the data path: only `Hello` is a round trip.

use crate::history::{Addr, Origin};
use crate::manifest::ExitStatus;
use crate::{ActorId, PROTOCOL_VERSION};
use serde::{Deserialize, Serialize};

/// What a new process image knows about where it came from.
// Its `Fork`/`Spawn` mirror `history::Origin`'s on purpose: a claim is what the process
// believes, the origin what the GD decided; each type's RON form is fixed on its own.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// A forked child: the parent's memory told it who the parent was and the child's number.
    Fork {
        /// The parent actor.
        parent: ActorId,
        /// The parent's creation counter for this child.
        index: u32,
    },
    /// Started by posix_spawn (or by ddbx, with parent `p0`): from the environment.
    Spawn {
        /// The parent actor (`p0`: ddbx itself, i.e. this is the root).
        parent: ActorId,
        /// The parent's creation counter for this child.
        index: u32,
    },
    /// Nothing known: the GD decides from the pid (an exec'd image of a known actor) or the
    /// parent pid (a child created inside libc).
    Unknown,
}

/// Whether the session records or replays.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Log every nondeterministic outcome.
    Record,
    /// Make every outcome come out as logged.
    Replay,
}

/// Messages from an LD to the GD.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum LdToGd {
    /// First message of every connection: who am I? Answered by [`GdToLd::Welcome`].
    Hello {
        /// Must equal [`PROTOCOL_VERSION`].
        protocol: u32,
        /// This process.
        pid: i32,
        /// Its parent.
        ppid: i32,
        /// What the process knows of its origin.
        claim: Claim,
        /// The program image's arguments.
        argv: Vec<String>,
        /// The session's secret, from [`crate::env::GD_KEY`] (a `Hello` without the right one
        /// is refused).
        #[serde(default)]
        key: String,
    },
    /// Replay: a connect succeeded; this is its address, for the acceptor's [`LdToGd::WhoIs`].
    Connected {
        /// The connecting actor.
        actor: ActorId,
        /// Its connect event number.
        event: u64,
        /// Local address of the connecting socket.
        local: Addr,
        /// Address connected to.
        remote: Addr,
    },
    /// Replay: which actor's connect is this accepted connection? Answered by [`GdToLd::Peer`].
    WhoIs {
        /// Local address of the accepted socket.
        local: Addr,
        /// Peer address of the accepted socket.
        remote: Addr,
        /// Unix sockets: the connecting process (SO_PEERCRED).
        peer_pid: Option<i32>,
    },
    /// Record: the program sent signal `sig` to process `pid` with kill(2). When `pid` is
    /// another recorded process that this signal ends, its death is this actor's doing: replay
    /// waits for this actor's kill instead of ending the process where its history ends.
    Signal {
        /// The sender.
        actor: ActorId,
        /// The process it was sent to (this run's pid).
        pid: i32,
        /// The signal.
        sig: i32,
    },
    /// Replay: the program is about to send SIGKILL to process `pid` with kill(2). Answered
    /// by [`GdToLd::KillNow`] once the kill can land where the record's did: on a process
    /// that has ended, when the record's target did not die of it (a `kill -9` after a grace
    /// period, `runuser`'s SIGKILL two seconds after its SIGTERM, which found the record's
    /// server gone), or on one at the end of its history, when it did.
    Kill {
        /// The process it is sent to (this run's pid).
        pid: i32,
        /// The signal.
        sig: i32,
    },
    /// I/O of a kind ddbx does not record yet (UDP, pipes): reported once per kind.
    Passthrough {
        /// The actor.
        actor: ActorId,
        /// One line saying what.
        what: String,
    },
    /// Replay: the program did something its history does not expect. All actors stop.
    Diverged {
        /// The actor.
        actor: ActorId,
        /// The event number at which it diverged.
        event: u64,
        /// What the history expected.
        expected: String,
        /// What happened.
        found: String,
    },
    /// The program does something ddbx cannot record faithfully: the session stops.
    Unsupported {
        /// The actor.
        actor: ActorId,
        /// What, and what to do about it.
        what: String,
    },
    /// A wait (waitpid, wait, …) of the actor's process returned the child `pid`, which had
    /// terminated, after `events` events.
    Reaped {
        /// The actor.
        actor: ActorId,
        /// Its events so far.
        events: u64,
        /// The child's process id.
        pid: i32,
        /// How the child ended (a child killed by a signal says so nowhere else: it writes no
        /// `Exiting`, and ddbx does not reap it).
        #[serde(default)]
        status: Option<ExitStatus>,
    },
    /// Replay: a global the GD asked to observe (`ReplayPlan::observe`) has this value after
    /// `events` events (sent when it changes, and once at the first event).
    Observed {
        /// The actor.
        actor: ActorId,
        /// Its events so far.
        events: u64,
        /// The global's name.
        name: String,
        /// Its value.
        value: i64,
    },
    /// The actor's process is exiting.
    Exiting {
        /// The actor.
        actor: ActorId,
        /// Its events so far (its history length).
        events: u64,
        /// How.
        status: ExitStatus,
    },
    /// Halting replay: before executing `event`, which may wait for other actors (a receive,
    /// an accept, a connect, a ready set): make what it needs happen.
    Need {
        /// The actor.
        actor: ActorId,
        /// The event about to be executed.
        event: u64,
    },
    /// Halting replay: the actor is passive, waiting at the entry of event `events + 1`
    /// (its simple predicate holds and nothing is owed up to `target`).
    Passive {
        /// The actor.
        actor: ActorId,
        /// Events executed.
        events: u64,
        /// The largest `RunUntil` target it had received when it became passive (the GD
        /// ignores a `Passive` that predates a later request).
        target: u64,
        /// Whether it waits at the entry of its next event, reading the GD (it can answer
        /// `Report`), rather than right after an event, possibly blocked elsewhere (waitpid).
        #[serde(default)]
        at_gate: bool,
        /// How many `Retarget`s it had received (the GD ignores a `Passive` decided under a
        /// predicate it has since replaced).
        #[serde(default)]
        epoch: u64,
    },
    /// Replay: the actor reached the end of a history that has no `Exit` (the recorded
    /// process was killed there): it waits to be killed again. When every live actor waits so,
    /// the GD ends the replay.
    AtEnd {
        /// The actor.
        actor: ActorId,
        /// Events executed (its whole history).
        events: u64,
    },
    /// Halting replay: answer to [`GdToLd::Report`].
    State {
        /// The actor.
        actor: ActorId,
        /// Events executed.
        events: u64,
        /// The next event, as its history record (`None` at the end of the history).
        next: Option<String>,
        /// Its variables: probes, then the built-in counters.
        vars: Vec<(String, i64)>,
        /// Whether its simple predicate holds (`None`: it has none).
        satisfied: Option<bool>,
    },
    /// Replay: this process accepted a connection that another actor's recorded accept returned
    /// (processes sharing one listening socket): the connection comes with this message
    /// (`SCM_RIGHTS`), for the GD to pass on ([`GdToLd::Deliver`]).
    Handover {
        /// The actor that took it.
        actor: ActorId,
        /// Who made it: a connecting actor and its connect event, or, for a connection an LD
        /// made to stand for a peer outside the session, that LD's actor and its accept event.
        connector: (ActorId, u64),
    },
    /// The actor's process is about to exec `program` as `uid`: its new image must say
    /// `Hello` (the GD reports an image that never does: the preload could not be loaded, or
    /// its LD could not join).
    Execing {
        /// The actor.
        actor: ActorId,
        /// What it execs (as the program named it; empty when unnamed, as for fexecve).
        program: String,
        /// Its real and effective uid at the exec.
        uid: (u32, u32),
    },
    /// The actor is about to exec `what`'s program, which will run unrecorded (statically
    /// linked, or a Go program): the actor's history ends here, and the session reports it.
    RunsUnrecorded {
        /// The actor.
        actor: ActorId,
        /// One line saying what and why.
        what: String,
    },
    /// The exec announced by [`LdToGd::Execing`] failed: the image goes on.
    ExecFailed {
        /// The actor.
        actor: ActorId,
    },
    /// Steered record (`ddbx explore`): the actor is about to make `event`, which its
    /// [`SteerPlan`] holds; it waits for [`GdToLd::Go`].
    Hold {
        /// The actor.
        actor: ActorId,
        /// The event it is about to make.
        event: u64,
    },
    /// Steered record: the actor made `event`, which its [`SteerPlan`] reports (others'
    /// held events may wait for it).
    Did {
        /// The actor.
        actor: ActorId,
        /// The event it made.
        event: u64,
    },
    /// Live run (`ddbx run --break-if`): after `events` events the actor's simple predicate
    /// became true (`holds`) or false. When it became true the LD waits for
    /// [`GdToLd::Proceed`]: at once if the whole predicate does not hold yet, else when the
    /// halt this starts is over (`cont`).
    Break {
        /// The actor.
        actor: ActorId,
        /// Events made.
        events: u64,
        /// Whether its simple predicate holds now.
        holds: bool,
        /// Its variables (probes, counters, the globals its predicate reads) when it holds.
        vars: Vec<(String, i64)>,
    },
    /// Live run, during a halt: the actor is about to interact with the process `peer` (a
    /// send to it, a receive from it, a connect), or a wait of its for that peer's channel
    /// timed out (`timed_out`). Answered by [`GdToLd::Proceed`]: at once if the peer runs,
    /// else when the halt is over (the actor is *delayed* there: paper 001's lazy halting).
    Touch {
        /// The actor.
        actor: ActorId,
        /// Events made.
        events: u64,
        /// The peer's process id.
        peer: i32,
        /// A wait's timeout expired (rather than an interaction about to be made).
        timed_out: bool,
        /// What the actor is about to do (`a send on fd 5`), for the halted state.
        doing: String,
        /// Its variables (probes, counters).
        vars: Vec<(String, i64)>,
    },
    /// The actor's posix_spawn of `program` as `uid` made its child number `index`: that
    /// child must say `Hello` (claiming `Spawn { parent: actor, index }`).
    Spawned {
        /// The parent actor.
        actor: ActorId,
        /// The child's number.
        index: u32,
        /// What it runs (as the program named it).
        program: String,
        /// The parent's real and effective uid.
        uid: (u32, u32),
    },
}

/// A descriptor the GD opened for an LD and sent with its `Welcome` (`SCM_RIGHTS`), so that a
/// process that switched to another uid still reaches its files in the private recording and
/// runtime directories.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passed {
    /// `history_out`, open for appending.
    History,
    /// `state_file`, open for reading and writing.
    State,
    /// The replay plan's `history`, open for reading.
    Replay,
}

/// One accept of the actor being replayed, and the connect it must return.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AcceptPlan {
    /// The accept: its event number in the acceptor's history.
    pub event: u64,
    /// The connecting actor.
    pub peer: ActorId,
    /// The connect: its event number in the connector's history.
    pub peer_event: u64,
}

/// What the LD must know to replay an actor.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplayPlan {
    /// The recorded history to follow.
    pub history: String,
    /// For each of this actor's accept events: the connecting actor and its connect event.
    /// Accepts from outside the session are absent.
    pub accepts: Vec<AcceptPlan>,
    /// How the record ended, when it did not end with an `Exit` record (killed).
    pub killed_by: Option<i32>,
    /// The signal the recorded process died of after its last record, whoever sent it (a
    /// recorded process too: then [`ReplayPlan::killed_by`] is `None`, and replay waits for
    /// that kill).
    #[serde(default)]
    pub ended_by_signal: Option<i32>,
    /// This actor's connect events whose peer was outside the session (replay plays it).
    #[serde(default)]
    pub external_connects: Vec<u64>,
    /// Globals to read from memory after every event and report when they change
    /// (`Observed`): traces and other predicates over memory are evaluated from these values.
    #[serde(default)]
    pub observe: Vec<(String, crate::pred::MemType)>,
    /// Whether the history has a `Close` event wherever the process let go of a stream socket
    /// (see [`crate::manifest::Manifest::closes`]).
    #[serde(default)]
    pub closes: bool,
    /// Whether the history says where each signal ran the program's handler (see
    /// [`crate::manifest::Manifest::signals`]): replay runs it there.
    #[serde(default)]
    pub signals: bool,
    /// Whether the history records pipes (see [`crate::manifest::Manifest::pipes`]).
    #[serde(default)]
    pub pipes: bool,
    /// A killed actor: bytes its peers' histories received from it that its own history never
    /// sent (it was killed between a send and its record), by fd: at the end of its history
    /// the LD lets the program's sends on that fd through, up to that many bytes.
    #[serde(default)]
    pub owed: Vec<(i32, u64)>,
    /// A killed actor: children (fork/spawn numbers) the manifest has but its history never
    /// says it created (it was killed between the fork and its record): at the end of its
    /// history, those forks happen as if recorded.
    #[serde(default)]
    pub unlogged_children: Vec<u32>,
    /// A killed actor: records its history file does not have but its peers' histories show
    /// happened (a connect made and never logged: `supervisor/src/recording/unlogged.rs`),
    /// appended to the history the LD follows.
    #[serde(default)]
    pub unlogged_tail: Vec<crate::Record>,
    /// The recorded pid of each child the actor created, by its fork/spawn number (sorted):
    /// what the record's fork returned to the program, and replay returns (the child's pid in
    /// this replay is shown to no process).
    #[serde(default)]
    pub child_pids: Vec<(u32, i32)>,
}

/// What an LD must do in a steered record (`ddbx explore`): a live run whose messages come in
/// an order the GD chooses, by holding their senders.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct SteerPlan {
    /// Events (sends, connects) to ask for before making them ([`LdToGd::Hold`]), ascending.
    pub hold: Vec<u64>,
    /// Events to tell the GD of once made ([`LdToGd::Did`]), ascending.
    pub report: Vec<u64>,
}

/// What an LD must know in a live run (`ddbx run --break-if`, paper 001).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct LivePlan {
    /// This actor's simple predicate (`None`: it has none, and never stops by itself).
    #[serde(with = "crate::pred::postfix")]
    pub sp: Option<crate::pred::Expr>,
    /// The session's clock page (see [`crate::live_clock`]), mapped for reading: whether a
    /// halt is on, and how long the halts so far lasted.
    pub clock: String,
}

/// What an LD must know in a halting replay (`ddbx replay --stop-if`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct HaltPlan {
    /// This actor's simple predicate (`None`: it has none and starts passive).
    #[serde(with = "crate::pred::postfix")]
    pub sp: Option<crate::pred::Expr>,
    /// Run at least until this many events were executed (requests made before it existed).
    pub target: u64,
    /// `Retarget`s so far (the predicate `sp` is that of the latest; echoed in `Passive`).
    #[serde(default)]
    pub epoch: u64,
    /// The shared files (their slots, as the history's turns name them: `~a12#5`) that a
    /// read saw only some writes of in the record, with the count of writes the last such
    /// read saw (its *horizon*): in a halting replay, the writes into such a file up to that
    /// turn keep their turns and the later ones wait for them (so that the reads see what
    /// they saw); writes into other files do not wait (they race, like sends).
    #[serde(default)]
    pub ordered_files: Vec<(u32, u64)>,
}

/// Messages from the GD to an LD.
// A `Welcome` (with its replay plan) is much larger than the other messages; there is one per
// process image and each message is decoded from a line and handled at once, so boxing it
// would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum GdToLd {
    /// Answer to `Hello`.
    Welcome {
        /// Who this process is.
        actor: ActorId,
        /// How it came to be (`Exec` images get the origin of their actor).
        origin: Origin,
        /// Whether this image continues an actor after exec.
        exec: bool,
        /// Record or replay.
        mode: Mode,
        /// Where to write the history (record; in replay, the replay's own history, if any).
        history_out: Option<String>,
        /// Per-actor state file (event counter shared across exec).
        state_file: String,
        /// Replay only: what to follow.
        replay: Option<Box<ReplayPlan>>,
        /// Halting replay only (`stop if`): this actor's part.
        #[serde(default)]
        halting: Option<HaltPlan>,
        /// The descriptors that come with this message, in order (the LD opens by path what
        /// is not among them).
        #[serde(default)]
        passed: Vec<Passed>,
        /// Steered record only (`ddbx explore`): which events wait and which are told.
        #[serde(default)]
        steer: Option<SteerPlan>,
        /// Live run only (`ddbx run`): this actor's breakpoint and the session's clock.
        #[serde(default)]
        live: Option<LivePlan>,
    },
    /// Answer to `WhoIs`: the connect event that made this connection (`None`: not managed).
    Peer {
        /// The connecting actor and its connect event, if it is one of ours.
        peer: Option<(ActorId, u64)>,
    },
    /// This process must not run under the session (replay: a process the record never had).
    Refuse {
        /// Why.
        why: String,
    },
    /// Halting replay: run at least until `event` events have been executed.
    RunUntil {
        /// The target event count.
        event: u64,
    },
    /// Halting replay: say where you are ([`LdToGd::State`]).
    Report,
    /// Halting replay: stop halting; run freely to the end of the history.
    Release,
    /// Halting replay, continuing from a halt: this actor's simple predicate is now `sp`
    /// (`None`: it has none). The LD says `Passive` again when it is (the GD counts it as
    /// running until then).
    Retarget {
        /// The new simple predicate.
        #[serde(with = "crate::pred::postfix")]
        sp: Option<crate::pred::Expr>,
        /// Retargets so far, this one included (echoed in `Passive`).
        #[serde(default)]
        epoch: u64,
    },
    /// Replay: a connection that one of this actor's recorded accepts returned, taken by another
    /// process ([`LdToGd::Handover`]); it comes with this message (`SCM_RIGHTS`).
    Deliver {
        /// Who made it (as in [`LdToGd::Handover`]).
        connector: (ActorId, u64),
    },
    /// Answer to [`LdToGd::Kill`]: send it now.
    KillNow,
    /// Answer to [`LdToGd::Hold`]: make the event now.
    Go {
        /// The event held.
        event: u64,
    },
    /// Answer to [`LdToGd::Break`] and [`LdToGd::Touch`]: go on.
    Proceed {
        /// The peer named by a `Touch` was stopped in the halt that the actor's wait
        /// overlapped, or the actor waited for the halt to end: a timed wait for it starts
        /// again with what is left of its timeout in virtual time.
        peer_stopped: bool,
    },
}

/// Encodes a message as one line (with its newline).
pub fn encode<T: Serialize>(msg: &T) -> String {
    let mut line = ron::to_string(msg).unwrap_or_default();
    line.push('\n');
    line
}

/// Decodes one line (without its newline).
pub fn decode<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, ron::error::SpannedError> {
    ron::from_str(line)
}

/// Checks the protocol version of a `Hello`.
pub fn protocol_matches(protocol: u32) -> bool {
    protocol == PROTOCOL_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_single_lines() {
        let msgs = [
            LdToGd::Hello {
                protocol: PROTOCOL_VERSION,
                pid: 1,
                ppid: 0,
                claim: Claim::Spawn {
                    parent: ActorId(0),
                    index: 1,
                },
                argv: vec!["a\nb".into()],
                key: "0f".into(),
            },
            LdToGd::Diverged {
                actor: ActorId(2),
                event: 4,
                expected: "Recv(fd: 3, n: 2)".into(),
                found: "Send".into(),
            },
        ];
        for m in msgs {
            let line = encode(&m);
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            assert_eq!(decode::<LdToGd>(line.trim_end()).unwrap(), m);
        }
    }
}
