// Times work on a stream with two events (README.md, "Rust").
use evx::{Device, EventFlags};

fn main() -> evx::Result<()> {
    let dev = Device::new(0)?;
    let stream = dev.create_stream(0, true)?; // evx's own stream
    let start = dev.create_event(EventFlags::DEFAULT)?; // events come from the device
    let end = dev.create_event(EventFlags::DEFAULT)?;

    start.record(&stream)?;
    // ... queue work on the stream ...
    end.record(&stream)?;
    end.synchronize()?;
    println!("{:.3} ms on {}", end.elapsed_since(&start)?, evx::driver_path()?);
    Ok(())
}
