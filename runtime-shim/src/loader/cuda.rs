//! The driver-API side of the loader: libcuda is opened at run time (cudarc's dynamic
//! loading), so building needs no CUDA and a machine without a driver gets an error value.
//!
//! One run of a sample: retain the device's primary context (a faulting grid's sticky error
//! survives in the process, so the differential run isolates runs in processes: `isolate`), set the
//! device-runtime limits, load the cubin (`cuModuleLoadData`), allocate and fill the buffers,
//! build the device graphs (`graphs`), launch the top-level kernel on the NULL stream (as a
//! one-node graph when there are device graphs; with `cuLaunchCooperativeKernel` when the
//! manifest's `[launch]` says `cooperative = true`), then its host-launched graphs, synchronise, copy buffers and `__device__`
//! globals back; then warm-up and timed repeats, each timed with CUDA events recorded around
//! the launch and its completion (the parent grid completes only when its whole launch tree
//! has), buffers refilled before each outside the timed span.
//!
//! The differential run times with [`time_interleaved`] instead: every compiler's cubin of one
//! sample loaded in one context, and the compilers taking turns run by run in a seeded random
//! order (`stats`), so that no compiler gets a quieter stretch of the machine than another.

use super::compare::RunOutput;
use super::manifest::{Manifest, ManifestError};
use cudarc::driver::sys::{self, CUresult};
use std::ffi::{c_void, CString};
use std::fmt;

/// A CUDA error: the driver's code and name, the runtime's `cudaError*` name where the codes
/// coincide, and the step that returned it.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaError {
    pub code: i32,
    /// `CUDA_ERROR_ILLEGAL_ADDRESS`
    pub driver_name: String,
    /// `cudaErrorIllegalAddress`
    pub runtime_name: Option<&'static str>,
    pub description: String,
    /// What was being done: `cuCtxSynchronize after launching parent`.
    pub step: String,
}

/// The runtime name of a driver error code, where the two agree (same value and meaning in
/// driver_types.h and cuda.h): the runtime name is what CUDA programmers search for.
pub fn runtime_name(code: i32) -> Option<&'static str> {
    crate::errors::error_name(code)
}

impl CudaError {
    /// An error from its parts (driver names come from `cuGetErrorName` when a driver exists).
    pub fn new(code: i32, driver_name: &str, description: &str, step: &str) -> CudaError {
        CudaError { code, driver_name: driver_name.to_string(), runtime_name: runtime_name(code), description: description.to_string(), step: step.to_string() }
    }

    fn from_driver(result: CUresult, step: &str) -> CudaError {
        let e = cudarc::driver::DriverError(result);
        let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("CUresult {}", result as i32));
        let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        CudaError::new(result as i32, &name, &text, step)
    }

    /// Whether this is the error called `name` (runtime or driver spelling).
    pub fn matches(&self, name: &str) -> bool {
        self.runtime_name == Some(name) || self.driver_name == name
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.runtime_name {
            Some(r) => write!(f, "{r} ({} = {}", self.driver_name, self.code)?,
            None => write!(f, "{} ({}", self.driver_name, self.code)?,
        }
        if !self.description.is_empty() {
            write!(f, ": {}", self.description)?;
        }
        write!(f, ") in {}", self.step)
    }
}

impl std::error::Error for CudaError {}

/// Why a sample could not be run at all.
#[derive(Debug)]
pub enum LoadError {
    /// libcuda could not be opened: no NVIDIA driver on this machine.
    NoDriver(String),
    /// The driver is there but a step failed before the launch (init, no device, a cubin the
    /// driver refuses, a kernel or global that does not exist, out of memory).
    Cuda(CudaError),
    /// The manifest cannot be turned into a launch.
    Manifest(ManifestError),
    /// The run in a separate process (see `isolate`) failed or reported a failure as text.
    Isolated(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::NoDriver(why) => write!(f, "no CUDA driver found: {why}"),
            LoadError::Cuda(e) => write!(f, "{e}"),
            LoadError::Manifest(e) => write!(f, "{e}"),
            LoadError::Isolated(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<CudaError> for LoadError {
    fn from(e: CudaError) -> LoadError {
        LoadError::Cuda(e)
    }
}

impl From<ManifestError> for LoadError {
    fn from(e: ManifestError) -> LoadError {
        LoadError::Manifest(e)
    }
}

pub(super) fn ck(result: CUresult, step: impl FnOnce() -> String) -> Result<(), CudaError> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::from_driver(result, &step()))
    }
}

/// Opens libcuda and initialises the driver; the error says why not.
pub fn init_driver() -> Result<(), LoadError> {
    // Opening the library is the only step cudarc would panic on; check it first.
    let present = std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
    if !present {
        return Err(LoadError::NoDriver(
            "libcuda.so (the NVIDIA driver's CUDA library) could not be loaded; this needs a machine with an NVIDIA GPU and its driver (set LD_LIBRARY_PATH if libcuda.so is in an unusual place)"
                .into(),
        ));
    }
    unsafe { ck(sys::cuInit(0), || "cuInit".into())? };
    Ok(())
}

/// The device a run uses and the driver it runs under.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    /// `cuDriverGetVersion`: 13000 for CUDA 13.0.
    pub cuda_driver_version: i32,
    /// The kernel module's version (`/proc/driver/nvidia/version`), e.g. 580.159.04.
    pub driver_release: Option<String>,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.cuda_driver_version;
        write!(f, "{} (sm_{}{}), driver {}, CUDA {}.{}", self.name, self.compute_capability.0, self.compute_capability.1, self.driver_release.as_deref().unwrap_or("?"), v / 1000, (v % 1000) / 10)
    }
}

/// Device 0 and the driver's versions.
pub fn device_info() -> Result<DeviceInfo, LoadError> {
    init_driver()?;
    unsafe {
        let mut dev = 0;
        ck(sys::cuDeviceGet(&mut dev, 0), || "cuDeviceGet(0)".into())?;
        let mut name = [0 as std::ffi::c_char; 256];
        ck(sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev), || "cuDeviceGetName".into())?;
        let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let (mut major, mut minor) = (0, 0);
        ck(sys::cuDeviceGetAttribute(&mut major, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), || "cuDeviceGetAttribute".into())?;
        ck(sys::cuDeviceGetAttribute(&mut minor, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), || "cuDeviceGetAttribute".into())?;
        let mut version = 0;
        ck(sys::cuDriverGetVersion(&mut version), || "cuDriverGetVersion".into())?;
        let driver_release = std::fs::read_to_string("/proc/driver/nvidia/version").ok().and_then(|t| {
            // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..."
            t.lines().next()?.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.')).map(str::to_string)
        });
        Ok(DeviceInfo { name, compute_capability: (major, minor), cuda_driver_version: version, driver_release })
    }
}

/// How many times to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Untimed runs before the timed ones.
    pub warmup: usize,
    /// Timed runs (the median is reported); 0 runs the sample once, untimed.
    pub repeat: usize,
    /// Capture what the kernels print instead of letting it reach the terminal.
    pub capture_stdout: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions { warmup: 3, repeat: 20, capture_stdout: true }
    }
}

/// The primary context of device 0, retained for one sample; releasing the last reference
/// frees its allocations, modules and limits. A sticky error outlives it (measured: the next
/// retain in the process fails with the same error), hence `isolate`.
struct Context {
    dev: sys::CUdevice,
}

impl Context {
    fn open() -> Result<Context, LoadError> {
        init_driver()?;
        unsafe {
            let mut dev = 0;
            ck(sys::cuDeviceGet(&mut dev, 0), || "cuDeviceGet(0)".into())?;
            let mut ctx = std::ptr::null_mut();
            ck(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), || "cuDevicePrimaryCtxRetain".into())?;
            let context = Context { dev };
            ck(sys::cuCtxSetCurrent(ctx), || "cuCtxSetCurrent".into())?;
            Ok(context)
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        unsafe {
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

/// Redirects file descriptor 1 into a temporary file, for device printf (the driver writes it
/// to the process's stdout at synchronisation).
pub struct StdoutCapture {
    saved: i32,
    file: std::fs::File,
}

impl StdoutCapture {
    pub fn start() -> std::io::Result<StdoutCapture> {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let _ = std::io::stdout().flush();
        unsafe { libc::fflush(std::ptr::null_mut()) };
        let file = tempfile_in_tmp()?;
        let saved = unsafe { libc::dup(1) };
        if saved < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if unsafe { libc::dup2(file.as_raw_fd(), 1) } < 0 {
            let e = std::io::Error::last_os_error();
            unsafe { libc::close(saved) };
            return Err(e);
        }
        Ok(StdoutCapture { saved, file })
    }

    /// Restores fd 1 and returns what was written to it.
    pub fn finish(mut self) -> Vec<u8> {
        use std::io::{Read, Seek, Write};
        self.restore();
        let mut out = Vec::new();
        let _ = self.file.flush();
        let _ = self.file.seek(std::io::SeekFrom::Start(0));
        let _ = self.file.read_to_end(&mut out);
        out
    }

    fn restore(&mut self) {
        use std::io::Write;
        if self.saved < 0 {
            return;
        }
        let _ = std::io::stdout().flush();
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(self.saved, 1);
            libc::close(self.saved);
        }
        self.saved = -1;
    }
}

impl Drop for StdoutCapture {
    fn drop(&mut self) {
        self.restore();
    }
}

/// An anonymous temporary file (unlinked at once), without a tempfile dependency.
fn tempfile_in_tmp() -> std::io::Result<std::fs::File> {
    let dir = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = dir.join(format!("cdpc-run-stdout-{}-{attempt}", std::process::id()));
        match std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
            Ok(f) => {
                let _ = std::fs::remove_file(&path);
                return Ok(f);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary file name"))
}

struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

/// Sets the device-runtime limits `manifest` asks for on the current context.
///
/// # Safety
/// A context is current.
unsafe fn set_limits(manifest: &Manifest) -> Result<(), CudaError> {
    let limits = [
        (sys::CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, manifest.limits.pending_launch_count, "pending_launch_count"),
        (sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE, manifest.limits.heap_bytes, "heap_bytes"),
        (sys::CUlimit::CU_LIMIT_STACK_SIZE, manifest.limits.stack_bytes, "stack_bytes"),
    ];
    for (limit, value, name) in limits {
        if let Some(v) = value {
            ck(sys::cuCtxSetLimit(limit, v as usize), || format!("cuCtxSetLimit({name} = {v})"))?;
        }
    }
    Ok(())
}

fn sync(kernel: &str) -> Result<(), CudaError> {
    unsafe { ck(sys::cuCtxSynchronize(), || format!("cuCtxSynchronize after launching `{kernel}` (the launch tree)")) }
}

/// One cubin loaded for one manifest in the current context: its module, top-level kernel,
/// buffers (with their initial bytes), device graphs and argument slots. Several can live in
/// one context (the interleaved timing loads every compiler's); dropping one frees what it made.
struct Loaded<'m> {
    manifest: &'m Manifest,
    module: sys::CUmodule,
    function: sys::CUfunction,
    buffers: Vec<DeviceBuffer>,
    /// Each buffer's initial bytes, computed from the manifest's formulas (seconds for a large
    /// buffer) or lent by the caller that computed them for an earlier load.
    initial: std::borrow::Cow<'m, [Vec<u8>]>,
    graphs: Option<super::graphs::HostGraphs>,
    /// Each argument's 8-byte slot; `params` points into them (boxed slice: never moves).
    _slots: Box<[[u64; 1]]>,
    params: Vec<*mut c_void>,
}

impl<'m> Loaded<'m> {
    /// # Safety
    /// A context is current, with `manifest`'s limits set.
    unsafe fn load(cubin: &[u8], manifest: &'m Manifest) -> Result<Loaded<'m>, LoadError> {
        Loaded::load_with(cubin, manifest, None)
    }

    /// [`Loaded::load`] with the buffers' initial bytes given (those of an earlier load of the
    /// same manifest) instead of computed again.
    unsafe fn load_with(cubin: &[u8], manifest: &'m Manifest, initial: Option<&'m [Vec<u8>]>) -> Result<Loaded<'m>, LoadError> {
        let kernel = &manifest.launch.kernel;
        // Before the module is loaded, so that a manifest's error leaves nothing loaded.
        let initial = match initial {
            Some(bytes) => std::borrow::Cow::Borrowed(bytes),
            None => std::borrow::Cow::Owned(manifest.buffers.iter().map(|b| b.initial_bytes(&manifest.vars)).collect::<Result<_, _>>()?),
        };
        // cuModuleLoadData reads an ELF image from memory; keep an 8-aligned copy.
        let mut image = vec![0u64; cubin.len().div_ceil(8) + 1];
        std::ptr::copy_nonoverlapping(cubin.as_ptr(), image.as_mut_ptr() as *mut u8, cubin.len());
        let mut module = std::ptr::null_mut();
        ck(sys::cuModuleLoadData(&mut module, image.as_ptr() as *const c_void), || "cuModuleLoadData (loading the cubin)".into())?;
        let mut loaded = Loaded { manifest, module, function: std::ptr::null_mut(), buffers: Vec::new(), initial, graphs: None, _slots: Box::new([]), params: Vec::new() };
        // A kernel without `extern "C"` has its C++ (mangled) name in the cubin.
        let symbol = super::symbols::kernel_symbol(cubin, kernel);
        let cname = CString::new(symbol.as_str()).map_err(|_| ManifestError(format!("kernel name `{kernel}` has a NUL byte")))?;
        ck(sys::cuModuleGetFunction(&mut loaded.function, module, cname.as_ptr()), || format!("cuModuleGetFunction(`{kernel}`)"))?;
        if manifest.launch.shared_bytes > 48 * 1024 {
            let n = manifest.launch.shared_bytes as i32;
            ck(sys::cuFuncSetAttribute(loaded.function, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, n), || format!("cuFuncSetAttribute(max dynamic shared = {n})"))?;
        }

        // Buffers: allocate (the initial bytes are kept for refills).
        for (b, bytes) in manifest.buffers.iter().zip(loaded.initial.iter()) {
            let mut ptr = 0;
            if !bytes.is_empty() {
                ck(sys::cuMemAlloc_v2(&mut ptr, bytes.len()), || format!("cuMemAlloc({} bytes for `{}`)", bytes.len(), b.name))?;
            }
            loaded.buffers.push(DeviceBuffer { ptr, bytes: bytes.len() });
        }
        loaded.fill()?;

        // Device graphs (built from this module's kernels), then the arguments: each in its
        // own 8-aligned slot; kernelParams points at the slots.
        let buffers = &loaded.buffers;
        let buffer_address = |name: &str| manifest.buffers.iter().position(|b| b.name == name).map(|k| buffers[k].ptr);
        let mut graphs = super::graphs::HostGraphs::build(module, manifest, &buffer_address)?;
        let args = manifest.arg_bytes(|key| graphs.handle(key).or_else(|| buffer_address(key)))?;
        if graphs.has_device_graphs() {
            graphs.make_launcher(loaded.function, &manifest.launch, &args)?;
        }
        loaded.graphs = Some(graphs);
        loaded._slots = super::graphs::slots(&args).into_boxed_slice();
        loaded.params = loaded._slots.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
        Ok(loaded)
    }

    fn fill(&self) -> Result<(), CudaError> {
        for ((d, bytes), b) in self.buffers.iter().zip(self.initial.iter()).zip(&self.manifest.buffers) {
            if d.bytes > 0 {
                unsafe { ck(sys::cuMemcpyHtoD_v2(d.ptr, bytes.as_ptr() as *const c_void, d.bytes), || format!("filling `{}`", b.name))? };
            }
        }
        Ok(())
    }

    /// Launches the top-level kernel on the NULL stream (asynchronously): as a one-node graph
    /// when there are device graphs, cooperatively when the manifest says so; then the
    /// `launch = "host"` graphs, in order, on the same stream.
    fn launch(&mut self) -> Result<(), CudaError> {
        let kernel = &self.manifest.launch.kernel;
        let l = &self.manifest.launch;
        let graphs = self.graphs.as_ref();
        unsafe {
            if let Some(g) = graphs.filter(|g| g.has_launcher()) {
                g.launch(kernel)?;
            } else if l.cooperative {
                // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE when the grid's blocks cannot all be
                // resident at once; an error value like any other.
                ck(
                    sys::cuLaunchCooperativeKernel(self.function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.shared_bytes, std::ptr::null_mut(), self.params.as_mut_ptr()),
                    || format!("cuLaunchCooperativeKernel(`{kernel}`, grid {:?}, block {:?}; a cooperative grid's blocks must all fit on the device at once)", l.grid, l.block),
                )?;
            } else {
                ck(
                    sys::cuLaunchKernel(
                        self.function,
                        l.grid[0],
                        l.grid[1],
                        l.grid[2],
                        l.block[0],
                        l.block[1],
                        l.block[2],
                        l.shared_bytes,
                        std::ptr::null_mut(),
                        self.params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    ),
                    || format!("cuLaunchKernel(`{kernel}`)"),
                )?;
            }
            if let Some(g) = graphs {
                g.launch_host_graphs()?;
            }
        }
        Ok(())
    }

    fn read_back(&self) -> Result<Vec<(String, Vec<u8>)>, CudaError> {
        let mut out = Vec::new();
        for (d, b) in self.buffers.iter().zip(&self.manifest.buffers) {
            let mut host = vec![0u8; d.bytes];
            if d.bytes > 0 {
                unsafe { ck(sys::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, d.ptr, d.bytes), || format!("reading `{}` back", b.name))? };
            }
            out.push((b.name.clone(), host));
        }
        Ok(out)
    }

    fn read_globals(&self) -> Result<Vec<(String, Vec<u8>)>, LoadError> {
        let mut out = Vec::new();
        for g in &self.manifest.globals {
            let gname = CString::new(g.name.as_str()).map_err(|_| ManifestError(format!("global `{}` has a NUL byte", g.name)))?;
            let (mut ptr, mut size) = (0, 0usize);
            unsafe { ck(sys::cuModuleGetGlobal_v2(&mut ptr, &mut size, self.module, gname.as_ptr()), || format!("cuModuleGetGlobal(`{}`)", g.name))? };
            if size != g.ty.size() {
                return Err(ManifestError(format!("global `{}` is {size} bytes in the cubin, but the manifest says {}", g.name, g.ty)).into());
            }
            let mut host = vec![0u8; size];
            unsafe { ck(sys::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, ptr, size), || format!("reading global `{}`", g.name))? };
            out.push((g.name.clone(), host));
        }
        Ok(out)
    }

    /// One timed run: buffers refilled and the device idle first (not timed), then CUDA events
    /// recorded around the launch; the time covers the parent grid and its whole launch tree.
    /// Returns the milliseconds and what the run printed (captured when `capture`).
    fn timed_run(&mut self, events: &Events, capture: bool) -> Result<(f64, Vec<u8>), CudaError> {
        let kernel = self.manifest.launch.kernel.clone();
        self.fill()?;
        sync(&kernel)?;
        let capture = if capture { StdoutCapture::start().ok() } else { None };
        let result = (|| unsafe {
            ck(sys::cuEventRecord(events.start, std::ptr::null_mut()), || "cuEventRecord(start)".into())?;
            self.launch()?;
            ck(sys::cuEventRecord(events.end, std::ptr::null_mut()), || "cuEventRecord(end)".into())?;
            ck(sys::cuEventSynchronize(events.end), || format!("cuEventSynchronize after launching `{kernel}`"))?;
            sync(&kernel)
        })();
        let printed = capture.map(StdoutCapture::finish).unwrap_or_default();
        result?;
        let mut ms = 0f32;
        unsafe { ck(sys::cuEventElapsedTime_v2(&mut ms, events.start, events.end), || "cuEventElapsedTime".into())? };
        Ok((ms as f64, printed))
    }
}

impl Drop for Loaded<'_> {
    fn drop(&mut self) {
        unsafe {
            for d in &self.buffers {
                if d.bytes > 0 {
                    let _ = sys::cuMemFree_v2(d.ptr);
                }
            }
            self.graphs = None;
            let _ = sys::cuModuleUnload(self.module);
        }
    }
}

/// The two events a timed run is measured between.
struct Events {
    start: sys::CUevent,
    end: sys::CUevent,
}

impl Events {
    fn new() -> Result<Events, CudaError> {
        let (mut start, mut end) = (std::ptr::null_mut(), std::ptr::null_mut());
        unsafe {
            ck(sys::cuEventCreate(&mut start, 0), || "cuEventCreate".into())?;
            let made = ck(sys::cuEventCreate(&mut end, 0), || "cuEventCreate".into());
            if let Err(e) = made {
                let _ = sys::cuEventDestroy_v2(start);
                return Err(e);
            }
        }
        Ok(Events { start, end })
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        unsafe {
            let _ = sys::cuEventDestroy_v2(self.start);
            let _ = sys::cuEventDestroy_v2(self.end);
        }
    }
}

/// Runs `cubin` as `manifest` says. `Err` when the sample could not be started; a CUDA error of
/// the launch tree itself is `Ok` with [`RunOutput::error`] set (some samples expect one).
pub fn run_sample(cubin: &[u8], manifest: &Manifest, options: &RunOptions) -> Result<RunOutput, LoadError> {
    let _context = Context::open()?;
    unsafe { set_limits(manifest)? };
    let mut loaded = unsafe { Loaded::load(cubin, manifest)? };
    let mut output = checked_run(&mut loaded, options.capture_stdout)?;
    if output.error.is_some() {
        return Ok(output);
    }

    // Warm-up and timed runs.
    if options.repeat > 0 {
        let events = Events::new()?;
        for k in 0..options.warmup + options.repeat {
            let (ms, printed) = match loaded.timed_run(&events, options.capture_stdout) {
                Ok(done) => done,
                Err(e) => {
                    output.timing_problems.push(format!("repeat {k} failed: {e}"));
                    break;
                }
            };
            if options.capture_stdout && manifest.deterministic && printed != output.stdout {
                output.timing_problems.push(format!("repeat {k} printed {:?}, the first run {:?}", String::from_utf8_lossy(&printed), String::from_utf8_lossy(&output.stdout)));
            }
            if k >= options.warmup {
                output.times_ms.push(ms);
            }
            if k + 1 == options.warmup + options.repeat && manifest.deterministic {
                let last = loaded.read_back()?;
                // Each differing buffer by name, with its first differing element's byte offset.
                let differing: Vec<String> = last
                    .iter()
                    .zip(&output.buffers)
                    .filter(|(a, b)| a.1 != b.1)
                    .map(|(a, b)| format!("`{}` (first at byte {})", a.0, a.1.iter().zip(&b.1).position(|(x, y)| x != y).unwrap_or(0)))
                    .collect();
                if !differing.is_empty() {
                    output.timing_problems.push(format!("the last repeat's buffers differ from the first run's (a deterministic sample): {}", differing.join(", ")));
                }
            }
        }
    }
    Ok(output)
}

/// One run of a freshly loaded (or freshly filled) cubin: launch, wait for the launch tree, read
/// the buffers and globals back. A CUDA error of the launch tree is `Ok` with `error` set.
fn checked_run(loaded: &mut Loaded, capture_stdout: bool) -> Result<RunOutput, LoadError> {
    let kernel = loaded.manifest.launch.kernel.clone();
    let mut output = RunOutput::default();
    let capture = if capture_stdout { StdoutCapture::start().ok() } else { None };
    let result = loaded.launch().and_then(|_| sync(&kernel));
    output.stdout = capture.map(StdoutCapture::finish).unwrap_or_default();
    if let Err(e) = result {
        output.error = Some(e);
        return Ok(output);
    }
    output.buffers = loaded.read_back()?;
    output.globals = loaded.read_globals()?;
    Ok(output)
}

/// The soak's runs: `cubin` run as `manifest` says up to `runs` times in one context, each run
/// with its module loaded afresh (`__device__` globals at their initial values, buffers filled
/// from the manifest), `each` called with every run's number and output as it finishes. What a
/// run shares with the one before it is the context: its limits, its device heap, the device
/// runtime's pools, which a process per run would make anew (about 0.4 s each on the H100,
/// which is what makes 100 runs of every cell affordable this way). Stops after a run whose
/// launch tree ended in a CUDA error, expected or not: a sticky error outlives the context
/// ([`Context`]), so the caller starts a new process for the runs left. Returns the runs made.
pub fn run_sample_many(cubin: &[u8], manifest: &Manifest, runs: usize, capture_stdout: bool, mut each: impl FnMut(usize, &RunOutput)) -> Result<usize, LoadError> {
    let _context = Context::open()?;
    unsafe { set_limits(manifest)? };
    // The initial bytes once (null_stream_order's 32 MiB buffer took seconds a run to compute).
    let initial: Vec<Vec<u8>> = manifest.buffers.iter().map(|b| b.initial_bytes(&manifest.vars)).collect::<Result<_, _>>()?;
    for k in 0..runs {
        let mut loaded = unsafe { Loaded::load_with(cubin, manifest, Some(&initial))? };
        let output = checked_run(&mut loaded, capture_stdout)?;
        drop(loaded);
        each(k, &output);
        if output.error.is_some() {
            return Ok(k + 1);
        }
    }
    Ok(runs)
}

/// How the interleaved timing runs: `warmup` untimed runs of each cubin (round-robin), then
/// `rounds` rounds in each of which every cubin runs once, in the order
/// [`super::stats::round_order`] draws from `seed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimingOptions {
    pub warmup: usize,
    pub rounds: usize,
    pub seed: u64,
}

impl Default for TimingOptions {
    fn default() -> TimingOptions {
        TimingOptions { warmup: 3, rounds: 30, seed: super::stats::DEFAULT_SEED }
    }
}

/// What the interleaved timing measured, one entry per cubin in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interleaved {
    pub times_ms: Vec<Vec<f64>>,
    /// Per cubin: runs that failed or gave other results than its first timed run.
    pub problems: Vec<Vec<String>>,
}

/// Times several compilers' cubins of one sample in one context, interleaved run by run (see
/// [`TimingOptions`]). A cubin whose run fails is timed no further (its problem says why); a
/// fault poisons the context, so the runner only times cubins whose checked run succeeded.
pub fn time_interleaved(cubins: &[Vec<u8>], manifest: &Manifest, options: &TimingOptions) -> Result<Interleaved, LoadError> {
    let _context = Context::open()?;
    unsafe { set_limits(manifest)? };
    let mut loaded = Vec::new();
    for c in cubins {
        loaded.push(unsafe { Loaded::load(c, manifest)? });
    }
    let n = loaded.len();
    let mut out = Interleaved { times_ms: vec![Vec::new(); n], problems: vec![Vec::new(); n] };
    let mut failed = vec![false; n];
    // What each cubin's first warm-up run printed and left in its buffers: every later run must
    // give the same (deterministic samples).
    let mut first: Vec<Option<(Vec<u8>, Vec<(String, Vec<u8>)>)>> = vec![None; n];
    let events = Events::new()?;
    let mut run = |k: usize, what: &str, out: &mut Interleaved| -> Option<f64> {
        if failed[k] {
            return None;
        }
        match loaded[k].timed_run(&events, true) {
            Err(e) => {
                out.problems[k].push(format!("{what} failed: {e}"));
                failed[k] = true;
                None
            }
            Ok((ms, printed)) => {
                if manifest.deterministic {
                    let buffers = loaded[k].read_back().unwrap_or_default();
                    match &first[k] {
                        None => first[k] = Some((printed, buffers)),
                        Some((p, b)) if *p != printed || *b != buffers => {
                            out.problems[k].push(format!("{what} gave other buffers or printed output than the first warm-up run (a deterministic sample)"));
                        }
                        Some(_) => {}
                    }
                }
                Some(ms)
            }
        }
    };
    for w in 0..options.warmup.max(1) {
        for k in 0..n {
            run(k, &format!("warm-up run {w}"), &mut out);
        }
    }
    for round in 0..options.rounds {
        for k in super::stats::round_order(n, round, options.seed) {
            if let Some(ms) = run(k, &format!("round {round}"), &mut out) {
                out.times_ms[k].push(ms);
            }
        }
    }
    drop(events);
    drop(loaded);
    Ok(out)
}
