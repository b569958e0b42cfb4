//! workbench-native: a worker process of Cache Workbench. Reads step orders (framed JSON)
//! on stdin and writes the same frames as the Python worker on stdout (docs/frames.md).
//!
//!   workbench-native            serve one coordinator (stdin/stdout frames)
//!   workbench-native --version  print the engine's name and version
//!   workbench-native --probe    one request at a time, for the conformance kit
//!   workbench-native --order-version  the version of the compiled step order it reads
//!   workbench-native --hiccup   the load machine's hiccup meter (hiccup/mod.rs)

mod addr;
mod cluster;
mod frames;
mod hash;
mod hiccup;
mod net;
mod order;
mod os;
mod pacing;
mod probe;
mod protocols;
mod pubsub;
mod record;
mod run;
mod text;
mod tls;
mod trace;
mod workload;

use run::engine::Engine;
use serde_json::json;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    match arg.as_str() {
        "--version" | "-V" => {
            println!("workbench-native {}", VERSION);
            return;
        }
        "--order-version" => {
            println!("{}", order::ORDER_VERSION);
            return;
        }
        "--probe" => {
            std::process::exit(probe::run());
        }
        "--hiccup" => {
            let rest: Vec<String> = std::env::args().skip(2).collect();
            std::process::exit(hiccup::run(&rest, VERSION));
        }
        "" => {}
        other => {
            eprintln!(
                "workbench-native: unknown argument {:?}; expected --version, --order-version, --probe or --hiccup",
                other
            );
            std::process::exit(2);
        }
    }
    let parent = os::parent::die_with_parent();
    // A fixed mmap threshold: large blocks (a histogram, a wide interval's frame) always
    // come as fresh zero pages and go back on free. With glibc's sliding threshold they
    // would come from the heap after the first free, and the heap would keep a stall's
    // high-water mark (os/alloc.rs).
    os::alloc::map_large_blocks();
    let out = frames::Out::private_stdout();
    let mut eng = Engine::new(out);
    eng.out.send(&json!({
        "type": "ready",
        "pid": std::process::id(),
        "engine": {"name": "native", "version": VERSION},
    }));
    loop {
        if let Some(order) = eng.orders.pop_front() {
            let status = run::run_step(&mut eng, &order);
            eng.out
                .send(&json!({"type": "step_done", "status": status}));
            continue;
        }
        if eng.eof {
            break;
        }
        // Wake once a second to notice a parent that died without closing our input.
        let at = pacing::now_ns() + 1_000_000_000;
        eng.wait_idle(at);
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(3);
        }
    }
}
