//! [`leading_a_group`]: a stdio server runs as the leader of a process
//! group of its own, killed with it when the gateway lets go of a server
//! still running.
//!
//! Its own group, as the official SDKs start theirs:
//!
//! - a signal that a terminal sends the gateway's group (Ctrl-C) reaches
//!   the gateway, which ends the server's calls in order (their
//!   cancellation notices, then the session, DESIGN R3), and not the
//!   server, which would die with its calls under way;
//! - the signals that end a server that does not exit when its stdin
//!   closes (the SDK's SIGTERM, then SIGKILL) reach the processes it
//!   started too (a server run by `npx` or `uvx` is their child).
//!
//! And killed when dropped still running: the SDK's task ends a session in
//! the background (stdin closed, then those signals), and a gateway that
//! exits (a second Ctrl-C, or a server slower than the close's bound) drops
//! that task, with the server, before it is done. The group goes with it
//! instead of running on without the gateway.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::ExitStatus;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use process_wrap::tokio::{ChildWrapper, CommandWrap, CommandWrapper, ProcessGroup};

/// `command`, set to start as the leader of a process group of its own,
/// which is killed when its child is dropped unreaped.
pub(crate) fn leading_a_group(command: tokio::process::Command) -> CommandWrap {
    let mut command = CommandWrap::from(command);
    command.wrap(ProcessGroup::leader()).wrap(KillGroupOnDrop);
    command
}

/// Wraps the child in a [`GroupChild`]; applied after [`ProcessGroup`].
#[derive(Debug, Clone, Copy)]
struct KillGroupOnDrop;

impl CommandWrapper for KillGroupOnDrop {
    fn wrap_child(
        &mut self,
        child: Box<dyn ChildWrapper>,
        _core: &CommandWrap,
    ) -> io::Result<Box<dyn ChildWrapper>> {
        let leader = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Ok(Box::new(GroupChild {
            child: Some(child),
            leader,
            reaped: false,
        }))
    }
}

/// A group leader's child, which kills its group when dropped before a
/// wait has reaped it.
#[derive(Debug)]
struct GroupChild {
    /// Taken only by [`ChildWrapper::into_inner`].
    child: Option<Box<dyn ChildWrapper>>,
    leader: Option<Pid>,
    /// Whether a wait through this wrapper saw the leader exit. Until then
    /// the leader is unreaped, so its id still names this group and no
    /// later one.
    reaped: bool,
}

impl GroupChild {
    fn child(&self) -> &dyn ChildWrapper {
        self.child
            .as_deref()
            .expect("only `into_inner` takes the child")
    }

    fn child_mut(&mut self) -> &mut dyn ChildWrapper {
        self.child
            .as_deref_mut()
            .expect("only `into_inner` takes the child")
    }
}

impl ChildWrapper for GroupChild {
    fn inner(&self) -> &dyn ChildWrapper {
        self.child()
    }

    fn inner_mut(&mut self) -> &mut dyn ChildWrapper {
        self.child_mut()
    }

    fn into_inner(mut self: Box<Self>) -> Box<dyn ChildWrapper> {
        self.child
            .take()
            .expect("only `into_inner` takes the child")
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child_mut().try_wait()?;
        self.reaped |= status.is_some();
        Ok(status)
    }

    fn wait(&mut self) -> Pin<Box<dyn Future<Output = io::Result<ExitStatus>> + Send + '_>> {
        Box::pin(async move {
            let status = self.child_mut().wait().await?;
            self.reaped = true;
            Ok(status)
        })
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if self.reaped || self.child.is_none() {
            return;
        }
        let Some(leader) = self.leader else {
            return;
        };
        match killpg(leader, Signal::SIGKILL) {
            Ok(()) => tracing::warn!(
                pid = leader.as_raw(),
                "killed the process group of a stdio MCP server still running \
                 when the gateway let go of it"
            ),
            Err(nix::errno::Errno::ESRCH) => {}
            Err(err) => tracing::warn!(
                pid = leader.as_raw(),
                "could not kill the process group of a stdio MCP server: {err}"
            ),
        }
    }
}
