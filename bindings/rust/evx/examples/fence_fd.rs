// An interprocess fence handed to another process as a file descriptor
// (docs/fences.md, "Rust"). This program runs itself again as the peer,
// with the fence's descriptor as the peer's stdin; unrelated processes
// pass it over a Unix socket (SCM_RIGHTS) the same way. evx opens a fence
// only in a process that did not make it.
use std::error::Error;
use std::io;
use std::os::unix::io::AsFd;
use std::process::{Command, Stdio};
use std::time::Duration;

use evx::{Device, Fence, WaitFlags};

fn main() -> Result<(), Box<dyn Error>> {
    let dev = Device::new(0)?;
    if std::env::args().nth(1).as_deref() == Some("peer") {
        // evx keeps a duplicate of its own: stdin stays the caller's
        let fence = dev.import_fence_fd(io::stdin().as_fd())?;
        if !fence.wait(1, Some(Duration::from_secs(30)))? {
            return Err("the maker's 1 never came".into());
        }
        return Ok(fence.signal_host(2)?);
    }
    let s = dev.create_stream(0, true)?;
    let fence = dev.create_fence(0, true)?; // interprocess
    let fd = fence.export_fd()?; // an OwnedFd, closed here once the peer has it
    let mut peer = Command::new(std::env::current_exe()?)
        .arg("peer")
        .stdin(Stdio::from(fd))
        .spawn()?;
    s.wait_fence(&fence, 2)?; // queued before the peer's signal, which waits for 1
    fence.signal_host(1)?;
    let status = peer.wait()?;
    if !fence.wait(2, Some(Duration::ZERO))? {
        fence.signal_host(2)?; // leave no queued wait that nothing releases
        return Err(format!("the peer did not signal 2 ({})", status).into());
    }
    s.synchronize()?;
    println!("value {}", fence.value()?);

    // A wait that first flushes remote (GPUDirect RDMA) writes, where the
    // device can: EVX_ERROR_NOT_SUPPORTED on the others (the emulation too).
    match s.wait_fence_with(&fence, 2, WaitFlags::FLUSH) {
        Ok(()) => println!("flush: queued"),
        Err(e) => println!("flush: {}", e.name()),
    }
    drop(fence);
    s.synchronize()?;
    let left = Fence::reclaim()?; // destroyed fences' memory not freed yet
    println!("pending {}, kept {}", left.pending, left.kept);
    Ok(())
}
