//! Predefined stream handles and the flags device code must pass.

/// The implicit NULL stream, shared by the threads of one block.
pub const NULL_STREAM: u64 = 0;
/// `cudaStreamTailLaunch`: runs after the launching grid and all its work completes.
/// Refused by the documented (V1) launch entry point; only the V2 entry point accepts it.
pub const TAIL_LAUNCH: u64 = 0x3;
/// `cudaStreamFireAndForget`: runs independently of the launching grid's other work.
/// Refused by the V1 entry point, like tail launch.
pub const FIRE_AND_FORGET: u64 = 0x4;

/// `cudaStreamGraphTailLaunch`: `cudaGraphLaunch` from device code runs the graph after the
/// launching graph finishes. Graph streams are for `cudaGraphLaunch` only, never `<<<>>>`.
pub const GRAPH_TAIL_LAUNCH: u64 = 0x0100_0000_0000_0000;
/// `cudaStreamGraphFireAndForget`: the graph runs at once, as a child of the launching graph.
pub const GRAPH_FIRE_AND_FORGET: u64 = 0x0200_0000_0000_0000;
/// `cudaStreamGraphFireAndForgetAsSibling`: the graph runs at once, as a sibling of the
/// launching graph (a child of its parent).
pub const GRAPH_FIRE_AND_FORGET_AS_SIBLING: u64 = 0x0300_0000_0000_0000;

/// Whether a stream handle is one of the three that only `cudaGraphLaunch` accepts.
pub fn is_graph_stream(handle: u64) -> bool {
    matches!(handle, GRAPH_TAIL_LAUNCH | GRAPH_FIRE_AND_FORGET | GRAPH_FIRE_AND_FORGET_AS_SIBLING)
}

/// How diagnostics name a stream handle: its constant's name in backquotes, the NULL stream,
/// or the number.
pub fn describe(handle: u64) -> String {
    match NAMED_HANDLES.iter().find(|(_, h)| *h == handle) {
        Some((name, _)) => format!("`{name}`"),
        None if handle == NULL_STREAM => "the NULL stream".to_string(),
        None => format!("the stream handle {handle:#x}"),
    }
}

/// Whether a stream handle must go through the V2 launch entry point.
pub fn needs_v2_abi(handle: u64) -> bool {
    handle == TAIL_LAUNCH || handle == FIRE_AND_FORGET
}

/// `cudaStreamNonBlocking`: device-created streams must carry it.
pub const STREAM_NON_BLOCKING: u32 = 0x1;
/// `cudaStreamDefault`.
pub const STREAM_DEFAULT: u32 = 0x0;
/// `cudaEventDisableTiming`: device-created events must carry it (no timing on the device).
pub const EVENT_DISABLE_TIMING: u32 = 0x2;
/// `cudaEventDefault`.
pub const EVENT_DEFAULT: u32 = 0x0;

/// Named constants the kernel language predefines, with their values and C types.
pub const NAMED_HANDLES: &[(&str, u64)] = &[
    ("cudaStreamTailLaunch", TAIL_LAUNCH),
    ("cudaStreamFireAndForget", FIRE_AND_FORGET),
    ("cudaStreamGraphTailLaunch", GRAPH_TAIL_LAUNCH),
    ("cudaStreamGraphFireAndForget", GRAPH_FIRE_AND_FORGET),
    ("cudaStreamGraphFireAndForgetAsSibling", GRAPH_FIRE_AND_FORGET_AS_SIBLING),
];

pub const NAMED_FLAGS: &[(&str, u32)] = &[
    ("cudaStreamNonBlocking", STREAM_NON_BLOCKING),
    ("cudaStreamDefault", STREAM_DEFAULT),
    ("cudaEventDisableTiming", EVENT_DISABLE_TIMING),
    ("cudaEventDefault", EVENT_DEFAULT),
    // `cudaEventRecordWithFlags`: only the default is accepted on the device.
    ("cudaEventRecordDefault", 0x0),
    ("cudaEventRecordExternal", 0x1),
    // `cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags`.
    ("cudaOccupancyDefault", 0x0),
    ("cudaOccupancyDisableCachingOverride", 0x1),
];
