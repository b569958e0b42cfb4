//! The mio loop of one worker: stdin for orders, a timerfd for precise wake-ups, the
//! reporting thread for every frame out; a step's sockets are registered on its poll too.

use crate::frames::{In, Out};
use crate::pacing::Timer;
use crate::record::report::Reporter;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::ErrorKind;

pub const STDIN: Token = Token(0);
pub const TIMER: Token = Token(1);

pub struct Engine {
    pub poll: Poll,
    pub events: Events,
    pub timer: Timer,
    input: In,
    /// Every frame out goes through the reporting thread, in order (`record/report.rs`).
    pub out: Reporter,
    pub stop: bool,
    pub eof: bool,
    pub go: Option<Option<f64>>,
    pub orders: VecDeque<Value>,
}

impl Engine {
    pub fn new(out: Out) -> Engine {
        let poll = Poll::new().expect("epoll");
        let timer = Timer::new();
        // SAFETY: fcntl on our own stdin.
        unsafe {
            let flags = libc::fcntl(0, libc::F_GETFL);
            libc::fcntl(0, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        poll.registry()
            .register(&mut SourceFd(&0), STDIN, Interest::READABLE)
            .expect("register stdin");
        poll.registry()
            .register(&mut SourceFd(&timer.fd), TIMER, Interest::READABLE)
            .expect("register timer");
        Engine {
            poll,
            events: Events::with_capacity(1024),
            timer,
            input: In::default(),
            out: Reporter::start(out),
            stop: false,
            eof: false,
            go: None,
            orders: VecDeque::new(),
        }
    }

    pub fn read_stdin(&mut self) {
        let mut buf = [0u8; 65536];
        loop {
            // SAFETY: reads into buf from our stdin.
            let n = unsafe { libc::read(0, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if n > 0 {
                self.input.feed(&buf[..n as usize]);
                continue;
            }
            if n == 0 {
                self.eof = true;
                self.stop = true;
            } else {
                let err = std::io::Error::last_os_error();
                if err.kind() == ErrorKind::Interrupted {
                    continue;
                }
                if err.kind() != ErrorKind::WouldBlock {
                    self.eof = true;
                    self.stop = true;
                }
            }
            break;
        }
        loop {
            match self.input.next() {
                Ok(Some(frame)) => match frame["type"].as_str().unwrap_or("") {
                    "step" => {
                        // A step's stop may follow its order in the same read: it is cleared
                        // here, when the order arrives, not when the step begins.
                        self.stop = self.eof;
                        self.orders.push_back(frame)
                    }
                    "go" => self.go = Some(frame["start"].as_f64()),
                    "stop" => self.stop = true,
                    _ => {}
                },
                Ok(None) => break,
                Err(message) => {
                    eprintln!("workbench-native: {}", message);
                    self.eof = true;
                    self.stop = true;
                    break;
                }
            }
        }
    }

    /// Wait for orders (no step running) until `deadline` (0: no deadline).
    pub fn wait_idle(&mut self, deadline: u64) {
        if deadline > 0 {
            self.timer.arm(deadline);
        }
        let _ = self.poll.poll(&mut self.events, None);
        let mut stdin = false;
        for ev in self.events.iter() {
            if ev.token() == STDIN {
                stdin = true;
            } else if ev.token() == TIMER {
                self.timer.clear();
            }
        }
        if stdin {
            self.read_stdin();
        }
    }

    pub fn error(&mut self, kind: &str, message: &str) {
        self.out
            .send(&json!({"type": "error", "kind": kind, "message": message, "trace": ""}));
    }
}
