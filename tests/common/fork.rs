//! A process forked in the middle of a test: the child runs one closure,
//! the parent another beside it, and the child's findings come back
//! through a pipe. Bounded: a child that outlives its bound is killed, and
//! the test fails saying it hung.

#![allow(unsafe_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

/// Forks. The child runs `child` and sends back what it returns, then
/// exits through `exit` (running the process's exit handlers, as a
/// program's end does); a panic there exits with 101. The parent runs
/// `parent` meanwhile, given the child's pid, then waits for the child for at most `bound` from
/// the fork. Returns what each returned.
///
/// # Panics
///
/// If the child panicked, or has not exited within `bound` (it is killed).
pub fn side_by_side<P>(
    child: impl FnOnce() -> String,
    parent: impl FnOnce(libc::pid_t) -> P,
    bound: Duration,
) -> (P, String) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe failed");
    let forked = Instant::now();
    // SAFETY: the child runs Rust code after the fork, as a program that
    // forks does; the tests fork while no other thread of theirs holds a
    // lock the child needs (flakegen's own are what the tests check).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: the read end, this copy's alone to close.
        unsafe { libc::close(fds[0]) };
        // SAFETY: the write end, owned by this File from here on.
        let mut pipe = unsafe { File::from_raw_fd(fds[1]) };
        let said = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child));
        let code = match said {
            Ok(said) => i32::from(pipe.write_all(said.as_bytes()).is_err()),
            Err(_) => 101,
        };
        drop(pipe);
        // SAFETY: ends the child; what runs now is the exit handlers.
        unsafe { libc::exit(code) };
    }
    // SAFETY: the write end, the child's alone to use.
    unsafe { libc::close(fds[1]) };
    // SAFETY: the read end, owned by this File from here on.
    let mut pipe = unsafe { File::from_raw_fd(fds[0]) };
    // Read while the parent runs: a child with much to say would otherwise
    // block on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut said = String::new();
        let _ = pipe.read_to_string(&mut said);
        said
    });
    let parents = parent(pid);
    let status = wait_within(pid, forked + bound);
    let said = reader.join().expect("the pipe's reader panicked");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child failed (status {status}); it said: {said}"
    );
    (parents, said)
}

/// Waits for child `pid` until `deadline`; kills it and panics past that.
fn wait_within(pid: libc::pid_t, deadline: Instant) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child without blocking, writing only `status`.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if waited == pid {
            return status;
        }
        assert!(waited == 0, "waitpid failed");
        if Instant::now() >= deadline {
            // SAFETY: our own child, which we then reap.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child did not exit in time: it hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Stops child `pid` (SIGSTOP), as a platform freezes an idle process.
pub fn stop(pid: libc::pid_t) {
    // SAFETY: signals a child of ours; SIGSTOP has no handler to run.
    let sent = unsafe { libc::kill(pid, libc::SIGSTOP) };
    assert_eq!(sent, 0, "SIGSTOP failed");
}

/// Lets child `pid` run again (SIGCONT).
pub fn thaw(pid: libc::pid_t) {
    // SAFETY: as in `stop`.
    let sent = unsafe { libc::kill(pid, libc::SIGCONT) };
    assert_eq!(sent, 0, "SIGCONT failed");
}
