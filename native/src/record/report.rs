//! The worker's frames are written by a thread of their own, so that reporting an
//! interval does not stall the loop that sends and reads.
//!
//! Turning an interval's counts into HdrHistograms, encoding them (V2, zlib, base64),
//! writing the frame and trimming the heap took the loop 1.1-6.4 ms at every interval
//! boundary, a fresh recorder's mapping included (h35, 10k-85k ops/s): at 85k ops/s that is
//! ~300 ops sent late, enough to fail a `p99<1ms` probe on its own. The loop now hands the
//! recorder over whole (a move) and takes a cleared one back (`Recorder::recycled`): 19-77
//! µs. This thread does the rest (0.2-0.4 ms), under `SCHED_BATCH` (`os/batch.rs` `background`).
//!
//! Every frame goes through the same queue, in the order the loop sends it, and this thread
//! writes them in that order: whatever the loop reports after an interval still reaches the
//! coordinator after it. Dropping the reporter waits for every frame queued to be written.

use super::encode::{stats, Encoder};
use super::Recorder;
use crate::frames::Out;
use serde_json::{json, Value};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

/// Cleared recorders kept for the loop to take (one is reported while another counts;
/// a phase by ops holds a third): more are unmapped.
const SPARES: usize = 2;

/// One interval as the loop measured it; its STATS object is made by the reporter.
pub struct Interval {
    pub index: usize,
    /// The interval's end, ns since the phase began.
    pub end_ns: u64,
    pub duration: f64,
    pub rec: Recorder,
    pub worker: usize,
    pub cpu_seconds: f64,
    /// The names of the recorder's histograms (`StepOrder::record`).
    pub kinds: Vec<String>,
    /// Of its CPU, the seconds of idle polling (`run/turn.rs` `poll_idle`, docs/frames.md).
    pub polled: f64,
}

enum Job {
    Frame(Value),
    Interval(Box<Interval>),
    /// A recorder the loop is done with that was not reported (a warm-up's).
    Recycle(Box<Recorder>),
}

/// The loop's end of the reporting thread.
pub struct Reporter {
    jobs: Option<Sender<Job>>,
    spares: Receiver<Recorder>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    pub fn start(out: Out) -> Reporter {
        let (jobs, queue) = channel();
        let (give, spares) = sync_channel(SPARES);
        let thread = std::thread::Builder::new()
            .name("report".to_string())
            .spawn(move || write_all(out, queue, give))
            .expect("start the reporting thread");
        Reporter {
            jobs: Some(jobs),
            spares,
            thread: Some(thread),
        }
    }

    /// Queue a frame; it is written after every frame queued before it.
    pub fn send(&mut self, message: &Value) {
        self.queue(Job::Frame(message.clone()));
    }

    /// Queue an interval's frame (made and written by the reporting thread).
    pub fn interval(&mut self, interval: Interval) {
        self.queue(Job::Interval(Box::new(interval)));
    }

    /// Hand back a recorder that will not be reported, to be cleared and used again.
    pub fn recycle(&mut self, rec: Recorder) {
        self.queue(Job::Recycle(Box::new(rec)));
    }

    /// A recorder that has counted nothing: a cleared one when one is ready, else a new one.
    pub fn recorder(&mut self, open_loop: bool, kinds: usize) -> Recorder {
        match self.spares.try_recv() {
            Ok(rec) if rec.open_loop == open_loop && rec.kinds == kinds => rec,
            Ok(rec) => rec.recycled(open_loop, kinds),
            Err(_) => Recorder::new(open_loop, kinds),
        }
    }

    fn queue(&mut self, job: Job) {
        let sent = self.jobs.as_ref().map(|q| q.send(job).is_ok());
        if sent != Some(true) {
            // The reporting thread is gone (it exits the process when the coordinator is),
            // so nothing can be reported any more.
            std::process::exit(3);
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        drop(self.jobs.take()); // the thread ends once it has written what is queued
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The reporting thread: each job in turn, until the loop's end of the queue is dropped.
fn write_all(mut out: Out, queue: Receiver<Job>, spares: SyncSender<Recorder>) {
    crate::os::batch::background();
    let mut enc = Encoder::new();
    for job in queue {
        match job {
            Job::Frame(message) => out.send(&message),
            Job::Interval(interval) => {
                let (frame, rec) = interval_frame(&mut enc, *interval);
                out.send(&frame);
                drop(frame);
                let (open_loop, kinds) = (rec.open_loop, rec.kinds);
                // A full shelf drops the recorder here, off the loop (an unmap).
                let _ = spares.try_send(rec.recycled(open_loop, kinds));
                crate::os::alloc::give_back(); // the interval's blocks are free now (`os/alloc.rs`)
            }
            Job::Recycle(rec) => {
                let (open_loop, kinds) = (rec.open_loop, rec.kinds);
                let _ = spares.try_send(rec.recycled(open_loop, kinds));
            }
        }
    }
}

/// The interval frame of docs/frames.md, and the recorder it was made from.
fn interval_frame(enc: &mut Encoder, i: Interval) -> (Value, Recorder) {
    let stats = stats(&i.rec, enc, i.duration, i.worker, i.cpu_seconds, &i.kinds);
    let frame = json!({
        "type": "interval",
        "index": i.index,
        "elapsed": i.end_ns as f64 / 1e9,
        "warmup": false,
        "stats": stats,
        "polled": i.polled,
    });
    (frame, i.rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::In;
    use std::io::{Read, Seek};

    fn interval(index: usize, rec: Recorder) -> Interval {
        Interval {
            index,
            end_ns: (index as u64 + 1) * 1_000_000_000,
            duration: 1.0,
            rec,
            worker: 0,
            cpu_seconds: 0.5,
            kinds: vec!["get".to_string(), "set".to_string()],
            polled: 0.0,
        }
    }

    /// Every frame the reporter wrote to a file, in order.
    fn written(file: &mut std::fs::File) -> Vec<Value> {
        let mut bytes = Vec::new();
        file.seek(std::io::SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut bytes).unwrap();
        let mut input = In::default();
        input.feed(&bytes);
        std::iter::from_fn(|| input.next().unwrap()).collect()
    }

    #[test]
    fn frames_are_written_in_the_order_the_loop_sent_them() {
        let path = std::env::temp_dir().join(format!("wb-report-{}", std::process::id()));
        let mut file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut reporter = Reporter::start(Out::to_file(file.try_clone().unwrap()));
        reporter.send(&json!({"type": "armed"}));
        for index in 0..3 {
            let mut rec = reporter.recorder(true, 2);
            rec.latency(0, 0, 1000 * (index as u64 + 1));
            rec.lag(7);
            reporter.interval(interval(index, rec));
            reporter.send(&json!({"type": "error", "kind": "after", "index": index}));
        }
        reporter.send(&json!({"type": "step_done", "status": "completed"}));
        drop(reporter); // waits for the frames queued
        let frames = written(&mut file);
        let kinds: Vec<String> = frames
            .iter()
            .map(|f| {
                let i = f.get("index").map(|i| i.to_string()).unwrap_or_default();
                format!("{}{}", f["type"].as_str().unwrap(), i)
            })
            .collect();
        let expected = "armed interval0 error0 interval1 error1 interval2 error2 step_done";
        assert_eq!(kinds.join(" "), expected);
        for f in frames.iter().filter(|f| f["type"] == "interval") {
            assert_eq!(f["stats"]["hist"].as_object().unwrap().len(), 1, "{}", f);
            assert_ne!(f["stats"]["send_lag"], "", "{}", f);
        }
    }

    #[test]
    fn a_recycled_recorder_reports_what_a_new_one_would() {
        let kinds = vec!["get".to_string(), "set".to_string()];
        let mut rec = Recorder::new(true, 2);
        for v in [5u64, 900, 70_000, 3_000_000] {
            rec.latency(0, 0, v);
            rec.latency(1, 0, v * 3);
            rec.lag(v);
        }
        rec.hits = 3;
        rec.error("connection", "refused");
        rec.skip("incr", 2);
        let again = rec.recycled(true, 2);
        for k in 0..2 {
            assert!(again.hist.is_empty(k), "histogram {} was not cleared", k);
        }
        assert!(again.send_lag.as_ref().unwrap().is_empty(0));
        let fresh = Recorder::new(true, 2);
        let mut enc = Encoder::new();
        assert_eq!(
            stats(&again, &mut enc, 1.0, 0, 0.1, &kinds),
            stats(&fresh, &mut enc, 1.0, 0, 0.1, &kinds)
        );
        // Closed loop after open loop: no send lag; more kinds: every one of them empty.
        let closed = again.recycled(false, 3);
        assert!(closed.send_lag.is_none());
        assert!((0..3).all(|k| closed.hist.is_empty(k)));
    }
}
