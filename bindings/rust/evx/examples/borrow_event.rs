// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// A CUevent made elsewhere, borrowed by evx (docs/bindings.md, "Rust"):
// `EVX_DRIVER=host cargo run --example borrow_event` on the host emulation.
// Here the maker is evx itself (an Event whose CUevent another library
// would hold), so that the program needs nothing else; with PyTorch, CuPy
// or the CUDA runtime, pass their cudaEvent_t and what keeps it alive.

use evx::{Device, Event, EventFlags};

fn main() -> evx::Result<()> {
    let dev = Device::new(0)?;
    let s = dev.create_stream(0, true)?;
    let theirs = dev.create_event(EventFlags::DEFAULT)?;
    theirs.record(&s)?;
    let native = theirs.native()?;
    // SAFETY: `theirs` keeps the CUevent alive, and the borrow keeps
    // `theirs` until it ends.
    let borrowed = unsafe { Event::wrap_with_owner(Some(dev), native, theirs)? };
    let other = dev.create_stream(0, true)?;
    other.wait_event(&borrowed)?; // work on `other` waits for theirs
    let end = other.record_new()?;
    end.synchronize()?;
    println!(
        "owned: {}, {:.3} ms since theirs",
        borrowed.is_owned()?,
        end.elapsed_since(&borrowed)?
    );
    borrowed.destroy() // drops `theirs` once no call uses the borrow
}
