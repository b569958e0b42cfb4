//! Reading a `.zst` trace as a stream through the system's libzstd (`libzstd.so.1`, BSD),
//! opened with dlopen when the first `.zst` file is read.
//!
//! Why not a crate: the pure-Rust decoders want newer compilers than Debian's rustc 1.63
//! or are old releases, and the `zstd` crate builds libzstd from C sources. libzstd1 is
//! part of every Debian system (apt itself depends on it), decodes at its full speed and
//! keeps memory to one window; no build dependency is added, and a machine without it gets
//! one line saying so when a `.zst` trace is replayed.

use std::ffi::{c_void, CStr};
use std::io::Read;

#[repr(C)]
struct InBuffer {
    src: *const c_void,
    size: usize,
    pos: usize,
}

#[repr(C)]
struct OutBuffer {
    dst: *mut c_void,
    size: usize,
    pos: usize,
}

type Create = unsafe extern "C" fn() -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void) -> usize;
type Stream = unsafe extern "C" fn(*mut c_void, *mut OutBuffer, *mut InBuffer) -> usize;
type IsError = unsafe extern "C" fn(usize) -> u32;
type ErrorName = unsafe extern "C" fn(usize) -> *const libc::c_char;

/// The few libzstd functions a streaming decoder needs.
struct Lib {
    create: Create,
    free: Free,
    stream: Stream,
    is_error: IsError,
    error_name: ErrorName,
}

fn symbol(lib: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: dlsym on a handle dlopen returned, with a NUL-terminated name.
    let f = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if f.is_null() {
        return Err(format!("libzstd.so.1 has no {:?}", name));
    }
    Ok(f)
}

fn load() -> Result<Lib, String> {
    let name = CStr::from_bytes_with_nul(b"libzstd.so.1\0").unwrap();
    // SAFETY: dlopen with a NUL-terminated name; the handle is kept for the process.
    let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    if lib.is_null() {
        return Err(
            "reading a .zst trace needs libzstd.so.1 (Debian: apt install libzstd1); \
             or decompress it first with zstd -d"
                .into(),
        );
    }
    let f = |n: &[u8]| symbol(lib, CStr::from_bytes_with_nul(n).unwrap());
    // SAFETY: each symbol is libzstd's function of that name, with the C signature above
    // (zstd.h, stable API since 1.0).
    unsafe {
        Ok(Lib {
            create: std::mem::transmute::<*mut c_void, Create>(f(b"ZSTD_createDStream\0")?),
            free: std::mem::transmute::<*mut c_void, Free>(f(b"ZSTD_freeDStream\0")?),
            stream: std::mem::transmute::<*mut c_void, Stream>(f(b"ZSTD_decompressStream\0")?),
            is_error: std::mem::transmute::<*mut c_void, IsError>(f(b"ZSTD_isError\0")?),
            error_name: std::mem::transmute::<*mut c_void, ErrorName>(f(b"ZSTD_getErrorName\0")?),
        })
    }
}

const IN_CHUNK: usize = 128 * 1024;

/// A decompressing reader: frames one after another read as one stream; a file that ends
/// inside a frame is an error, never a shorter trace.
pub struct ZstdReader<R: Read> {
    lib: Lib,
    ctx: *mut c_void,
    src: R,
    input: Vec<u8>,
    in_pos: usize,
    in_len: usize,
    /// libzstd's last hint: 0 when a frame has just ended.
    hint: usize,
    eof: bool,
}

impl<R: Read> ZstdReader<R> {
    pub fn new(src: R) -> Result<ZstdReader<R>, String> {
        let lib = load()?;
        // SAFETY: a plain constructor; null means out of memory.
        let ctx = unsafe { (lib.create)() };
        if ctx.is_null() {
            return Err("libzstd could not make a decoder".into());
        }
        Ok(ZstdReader {
            lib,
            ctx,
            src,
            input: vec![0; IN_CHUNK],
            in_pos: 0,
            in_len: 0,
            hint: 0,
            eof: false,
        })
    }
}

impl<R: Read> Read for ZstdReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_pos == self.in_len && !self.eof {
                self.in_len = self.src.read(&mut self.input)?;
                self.in_pos = 0;
                self.eof = self.in_len == 0;
            }
            if self.in_pos == self.in_len && self.eof {
                if self.hint != 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the .zst file ends inside a frame (truncated)",
                    ));
                }
                return Ok(0);
            }
            let mut out = OutBuffer {
                dst: buf.as_mut_ptr() as *mut c_void,
                size: buf.len(),
                pos: 0,
            };
            let mut inp = InBuffer {
                src: self.input.as_ptr() as *const c_void,
                size: self.in_len,
                pos: self.in_pos,
            };
            // SAFETY: both buffers point into live slices of the sizes given.
            let r = unsafe { (self.lib.stream)(self.ctx, &mut out, &mut inp) };
            // SAFETY: plain functions of a result code.
            if unsafe { (self.lib.is_error)(r) } != 0 {
                let name = unsafe { CStr::from_ptr((self.lib.error_name)(r)) };
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("zstd: {}", name.to_string_lossy()),
                ));
            }
            self.in_pos = inp.pos;
            self.hint = r;
            if out.pos > 0 {
                return Ok(out.pos);
            }
        }
    }
}

impl<R: Read> Drop for ZstdReader<R> {
    fn drop(&mut self) {
        // SAFETY: the decoder made in `new`, freed once.
        unsafe { (self.lib.free)(self.ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `zstd` the command, when installed: the test compresses with it.
    fn compress(data: &[u8]) -> Option<Vec<u8>> {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new("zstd")
            .args(["-q", "-c"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let mut stdin = child.stdin.take()?;
        let data = data.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&data));
        let out = child.wait_with_output().ok()?;
        writer.join().ok()?.ok()?;
        Some(out.stdout)
    }

    #[test]
    fn frames_read_as_one_stream_and_a_cut_frame_is_an_error() {
        let a: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let (za, zb) = match (compress(&a), compress(b"tail")) {
            (Some(za), Some(zb)) => (za, zb),
            _ => return, // no zstd command on this machine
        };
        let mut both = za.clone();
        both.extend_from_slice(&zb);
        let mut out = Vec::new();
        ZstdReader::new(&both[..])
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(&out[..a.len()], &a[..]);
        assert_eq!(&out[a.len()..], b"tail");
        let cut = &za[..za.len() - 10];
        let e = ZstdReader::new(cut)
            .unwrap()
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("truncated"), "{}", e);
    }
}
