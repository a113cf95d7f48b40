//! Device graphs for a run (`[[graph]]` in a manifest). Each graph's kernel nodes run one after
//! the other; the graph is instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH` and
//! uploaded, the two conditions the programming guide ("Device Graph Launch") sets for
//! `cudaGraphLaunch` from device code, and its `CUgraphExec` is what `graph:NAME` passes. A
//! node marked `device_updatable` gets `CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE`, and
//! its `CUgraphDeviceNode` is what `node:NAME.K` passes.
//!
//! Device graphs may only be launched from a kernel that itself runs in a graph, so with any
//! device `[[graph]]` the top-level launch becomes a one-node graph launched with `cuGraphLaunch`.
//!
//! A graph with `launch = "host"` is instantiated for the host and launched by the runner after
//! the top-level launch. Only such a graph may hold conditional nodes (IF, WHILE): each gets a
//! handle from `cuGraphConditionalHandleCreate` with its default value and
//! `CU_GRAPH_COND_ASSIGN_DEFAULT` (`cond:GRAPH.HANDLE` passes it to the graph's kernels, which
//! call `cudaGraphSetConditional`), and is added with `cuGraphAddNode` as a
//! `CU_GRAPH_NODE_TYPE_CONDITIONAL` node whose body graph, made by the driver, gets the body's
//! kernel nodes.

use super::cuda::{ck, CudaError, LoadError};
use super::manifest::{CondKind, GraphLaunch, Launch, Manifest, ManifestError, Node};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::{c_void, CString};

/// The graphs of one run, destroyed with it.
pub(super) struct HostGraphs {
    graphs: Vec<sys::CUgraph>,
    execs: Vec<sys::CUgraphExec>,
    /// `graph:NAME` and `node:NAME.K` to their handles.
    handles: HashMap<String, u64>,
    /// The top-level launch as a graph, when there are device graphs.
    launcher: Option<sys::CUgraphExec>,
    /// The `launch = "host"` graphs, launched after the top-level launch in this order.
    host: Vec<(String, sys::CUgraphExec)>,
}

/// Each argument in its own 8-byte slot, as `kernelParams` wants them.
pub(super) fn slots(args: &[Vec<u8>]) -> Vec<[u64; 1]> {
    args.iter()
        .map(|a| {
            let mut slot = [0u64; 1];
            let n = a.len().min(8);
            // SAFETY: at most 8 bytes into an 8-byte slot.
            unsafe { std::ptr::copy_nonoverlapping(a.as_ptr(), slot.as_mut_ptr() as *mut u8, n) };
            slot
        })
        .collect()
}

impl HostGraphs {
    /// Builds, instantiates and uploads every graph of `manifest` from `module`'s kernels.
    ///
    /// # Safety
    /// `module` is a loaded module of the current context.
    pub(super) unsafe fn build(module: sys::CUmodule, manifest: &Manifest, buffer: &dyn Fn(&str) -> Option<u64>) -> Result<HostGraphs, LoadError> {
        let mut out = HostGraphs { graphs: Vec::new(), execs: Vec::new(), handles: HashMap::new(), launcher: None, host: Vec::new() };
        for g in &manifest.graphs {
            let mut graph = std::ptr::null_mut();
            ck(sys::cuGraphCreate(&mut graph, 0), || format!("cuGraphCreate(`{}`)", g.name))?;
            out.graphs.push(graph);
            // The condition handles first: kernels before a conditional node may set it too.
            for n in &g.nodes {
                if let Node::Conditional(c) = n {
                    let handle = condition_handle(graph, c.default, &format!("graph `{}`, handle `{}`", g.name, c.handle))?;
                    out.handles.insert(format!("cond:{}.{}", g.name, c.handle), handle);
                }
            }
            let resolve = |key: &str| out.handles.get(key).copied().or_else(|| buffer(key));
            let mut previous: Option<sys::CUgraphNode> = None;
            let mut device_nodes = Vec::new();
            for (k, node) in g.nodes.iter().enumerate() {
                let added = match node {
                    Node::Kernel(node) => {
                        let what = format!("graph `{}`, node {k} (`{}`)", g.name, node.launch.kernel);
                        let function = kernel(module, &node.launch.kernel)?;
                        let args = node.launch.args.iter().map(|a| a.bytes(resolve)).collect::<Result<Vec<_>, _>>()?;
                        let added = add_kernel_node(graph, function, &node.launch, &args, previous, &what)?;
                        if node.device_updatable {
                            device_nodes.push((format!("node:{}.{k}", g.name), make_device_updatable(added, &what)?));
                        }
                        added
                    }
                    Node::Conditional(c) => {
                        let what = format!("graph `{}`, node {k} (conditional `{}`)", g.name, c.handle);
                        let handle = resolve(&format!("cond:{}.{}", g.name, c.handle)).unwrap_or(0);
                        let (added, body) = add_conditional_node(graph, handle, c.kind, previous, &what)?;
                        let mut before: Option<sys::CUgraphNode> = None;
                        for (j, launch) in c.body.iter().enumerate() {
                            let what = format!("{what}, body node {j} (`{}`)", launch.kernel);
                            let function = kernel(module, &launch.kernel)?;
                            let args = launch.args.iter().map(|a| a.bytes(resolve)).collect::<Result<Vec<_>, _>>()?;
                            before = Some(add_kernel_node(body, function, launch, &args, before, &what)?);
                        }
                        added
                    }
                };
                previous = Some(added);
            }
            out.handles.extend(device_nodes);
            let mut exec = std::ptr::null_mut();
            match g.launch {
                GraphLaunch::Device => {
                    let flags = sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH.0 as u64;
                    ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags), || {
                        format!("instantiating graph `{}` for device launch (cuGraphInstantiateWithFlags with CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH; device graphs may hold only kernel, memcpy and memset nodes on one device)", g.name)
                    })?;
                    out.execs.push(exec);
                    ck(sys::cuGraphUpload(exec, std::ptr::null_mut()), || format!("cuGraphUpload(`{}`)", g.name))?;
                    out.handles.insert(format!("graph:{}", g.name), exec as u64);
                }
                GraphLaunch::Host => {
                    ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), || format!("instantiating graph `{}` (launch = \"host\")", g.name))?;
                    out.execs.push(exec);
                    out.host.push((g.name.clone(), exec));
                }
            }
        }
        Ok(out)
    }

    /// The handle `graph:NAME` or `node:NAME.K` passes.
    pub(super) fn handle(&self, key: &str) -> Option<u64> {
        self.handles.get(key).copied()
    }

    /// Whether there are graphs for device launch (then the top-level launch runs as a graph).
    pub(super) fn has_device_graphs(&self) -> bool {
        self.handles.keys().any(|k| k.starts_with("graph:"))
    }

    /// Whether the top-level launch runs as a graph ([`HostGraphs::make_launcher`]).
    pub(super) fn has_launcher(&self) -> bool {
        self.launcher.is_some()
    }

    /// Launches the `launch = "host"` graphs on the NULL stream, in the manifest's order.
    ///
    /// # Safety
    /// The context of [`HostGraphs::build`] is current.
    pub(super) unsafe fn launch_host_graphs(&self) -> Result<(), CudaError> {
        for (name, exec) in &self.host {
            ck(sys::cuGraphLaunch(*exec, std::ptr::null_mut()), || format!("cuGraphLaunch(graph `{name}`, launch = \"host\")"))?;
        }
        Ok(())
    }

    /// Makes the top-level launch a one-node graph (with its arguments copied now).
    ///
    /// # Safety
    /// `function` is a kernel of the current context; `args` are its parameters' bytes.
    pub(super) unsafe fn make_launcher(&mut self, function: sys::CUfunction, launch: &Launch, args: &[Vec<u8>]) -> Result<(), CudaError> {
        let mut graph = std::ptr::null_mut();
        ck(sys::cuGraphCreate(&mut graph, 0), || "cuGraphCreate(the top-level launch)".into())?;
        self.graphs.push(graph);
        let what = format!("the top-level launch of `{}`", launch.kernel);
        let node = add_kernel_node(graph, function, launch, args, None, &what)?;
        if launch.cooperative {
            let mut value: sys::CUkernelNodeAttrValue = std::mem::zeroed();
            value.cooperative = 1;
            ck(sys::cuGraphKernelNodeSetAttribute(node, sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value), || format!("making {what} cooperative (CU_LAUNCH_ATTRIBUTE_COOPERATIVE)"))?;
        }
        // Instantiated for device launch where the driver allows it, like the manifest's graphs:
        // only then is the parent part of a *device* graph, for which cudaGetCurrentGraphExec()
        // returns its handle (measured on the H100: with flags 0 it returns NULL, in nvcc's
        // build as in cdpc's). The driver refuses that flag (CUDA_ERROR_INVALID_VALUE) for a
        // kernel that launches kernels itself (measured: devrt_calls); such a parent still
        // launches device graphs from an ordinary graph, so it gets one.
        let mut exec = std::ptr::null_mut();
        let flags = sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH.0 as u64;
        if sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags) == sys::CUresult::CUDA_SUCCESS {
            self.execs.push(exec);
            ck(sys::cuGraphUpload(exec, std::ptr::null_mut()), || "cuGraphUpload(the top-level launch's graph)".into())?;
        } else {
            exec = std::ptr::null_mut();
            ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), || "instantiating the top-level launch's graph".into())?;
            self.execs.push(exec);
        }
        self.launcher = Some(exec);
        Ok(())
    }

    /// Launches the top-level graph on the NULL stream.
    ///
    /// # Safety
    /// The context of [`HostGraphs::build`] is current.
    pub(super) unsafe fn launch(&self, kernel: &str) -> Result<(), CudaError> {
        let Some(exec) = self.launcher else {
            return Err(CudaError::new(1, "CUDA_ERROR_INVALID_VALUE", "no top-level graph", "cuGraphLaunch"));
        };
        ck(sys::cuGraphLaunch(exec, std::ptr::null_mut()), || format!("cuGraphLaunch(the graph of `{kernel}`)"))
    }
}

impl Drop for HostGraphs {
    fn drop(&mut self) {
        // SAFETY: each handle was created by this value and is destroyed once.
        unsafe {
            for exec in self.execs.drain(..) {
                let _ = sys::cuGraphExecDestroy(exec);
            }
            for graph in self.graphs.drain(..) {
                let _ = sys::cuGraphDestroy(graph);
            }
        }
    }
}

unsafe fn kernel(module: sys::CUmodule, name: &str) -> Result<sys::CUfunction, LoadError> {
    let cname = CString::new(name).map_err(|_| ManifestError(format!("kernel name `{name}` has a NUL byte")))?;
    let mut function = std::ptr::null_mut();
    ck(sys::cuModuleGetFunction(&mut function, module, cname.as_ptr()), || format!("cuModuleGetFunction(`{name}`)"))?;
    Ok(function)
}

unsafe fn add_kernel_node(graph: sys::CUgraph, function: sys::CUfunction, launch: &Launch, args: &[Vec<u8>], after: Option<sys::CUgraphNode>, what: &str) -> Result<sys::CUgraphNode, CudaError> {
    let mut slots = slots(args);
    let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
    let mut p: sys::CUDA_KERNEL_NODE_PARAMS = std::mem::zeroed();
    p.func = function;
    [p.gridDimX, p.gridDimY, p.gridDimZ] = launch.grid;
    [p.blockDimX, p.blockDimY, p.blockDimZ] = launch.block;
    p.sharedMemBytes = launch.shared_bytes;
    p.kernelParams = params.as_mut_ptr();
    let deps: Vec<sys::CUgraphNode> = after.into_iter().collect();
    let mut node = std::ptr::null_mut();
    ck(sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &p), || format!("cuGraphAddKernelNode({what})"))?;
    Ok(node)
}

/// Sets the device-updatable attribute and returns the node's device handle (the driver
/// returns it through the attribute's value, read back here).
unsafe fn make_device_updatable(node: sys::CUgraphNode, what: &str) -> Result<u64, CudaError> {
    let attr = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE;
    let mut value: sys::CUkernelNodeAttrValue = std::mem::zeroed();
    value.deviceUpdatableKernelNode.deviceUpdatable = 1;
    ck(sys::cuGraphKernelNodeSetAttribute(node, attr, &value), || format!("making {what} device-updatable"))?;
    let mut read: sys::CUkernelNodeAttrValue = std::mem::zeroed();
    ck(sys::cuGraphKernelNodeGetAttribute(node, attr, &mut read), || format!("reading the device handle of {what}"))?;
    let handle = match read.deviceUpdatableKernelNode.devNode as u64 {
        0 => value.deviceUpdatableKernelNode.devNode as u64,
        h => h,
    };
    if handle == 0 {
        return Err(CudaError::new(1, "CUDA_ERROR_INVALID_VALUE", "the driver returned no device node handle", what));
    }
    Ok(handle)
}

/// A condition handle of `graph` that every launch of the graph resets to `default`.
unsafe fn condition_handle(graph: sys::CUgraph, default: u32, what: &str) -> Result<u64, CudaError> {
    let mut ctx = std::ptr::null_mut();
    ck(sys::cuCtxGetCurrent(&mut ctx), || "cuCtxGetCurrent".into())?;
    let mut handle: sys::CUgraphConditionalHandle = 0;
    ck(sys::cuGraphConditionalHandleCreate(&mut handle, graph, ctx, default, sys::CU_GRAPH_COND_ASSIGN_DEFAULT), || {
        format!("cuGraphConditionalHandleCreate({what}, default {default}, CU_GRAPH_COND_ASSIGN_DEFAULT)")
    })?;
    Ok(handle)
}

/// Adds a conditional node (one body graph) after `after`; returns the node and its body graph,
/// which the driver made and owns.
unsafe fn add_conditional_node(graph: sys::CUgraph, handle: u64, kind: CondKind, after: Option<sys::CUgraphNode>, what: &str) -> Result<(sys::CUgraphNode, sys::CUgraph), CudaError> {
    let mut ctx = std::ptr::null_mut();
    ck(sys::cuCtxGetCurrent(&mut ctx), || "cuCtxGetCurrent".into())?;
    let mut params: sys::CUgraphNodeParams = std::mem::zeroed();
    params.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
    params.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
        handle,
        type_: match kind {
            CondKind::If => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
            CondKind::While => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
        },
        size: 1,
        phGraph_out: std::ptr::null_mut(),
        ctx,
    };
    let deps: Vec<sys::CUgraphNode> = after.into_iter().collect();
    let mut node = std::ptr::null_mut();
    ck(sys::cuGraphAddNode_v2(&mut node, graph, deps.as_ptr(), std::ptr::null(), deps.len(), &mut params), || format!("cuGraphAddNode({what})"))?;
    // The driver fills phGraph_out with an array (owned by the node) of `size` body graphs.
    let bodies = params.__bindgen_anon_1.conditional.phGraph_out;
    if bodies.is_null() || (*bodies).is_null() {
        return Err(CudaError::new(1, "CUDA_ERROR_INVALID_VALUE", "the driver returned no body graph", what));
    }
    Ok((node, *bodies))
}
