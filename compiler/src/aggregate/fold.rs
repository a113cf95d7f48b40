//! Launches through a pointer whose value is one kernel's address on every path become
//! launches of that kernel, before thresholding and aggregation, which need the child's body
//! (nvcc folds the same launches: `docs/launch-sequence.md`, "Launches through a pointer to a
//! kernel"). The value is followed through pointer casts and locals that only their
//! declaration stores (`uniform::SingleStores`); a launch is folded only when the kernel's own
//! type is the pointer's, so that its arguments, converted and laid out by the pointer's
//! type, are the kernel's. Anything else stays a launch through the pointer.

use super::*;

/// Folds the launches of every function of `module` whose target is a constant kernel.
pub(super) fn fold_kernel_pointers(module: &mut Module) {
    for i in 0..module.functions.len() {
        let Some(body) = &module.functions[i].body else { continue };
        let stores = uniform::SingleStores::of(body);
        let mut folds: BTreeMap<(u32, u32), FuncId> = BTreeMap::new();
        visit_block(body, &mut |e| {
            let ExprKind::Launch(l) = &e.kind else { return };
            let LaunchTarget::Pointer(pointer) = &l.target else { return };
            let Some(k) = stores.kernel_address(pointer, 0) else { return };
            let f = module.function(k);
            let own = Type::FnPtr(Box::new(crate::types::FnSig { ret: f.return_type.clone(), params: f.param_types().cloned().collect() }));
            if f.kind == FunctionKind::Kernel && own == pointer.ty {
                folds.insert((l.span.start, l.span.end), k);
            }
        });
        if folds.is_empty() {
            continue;
        }
        let Some(mut body) = module.functions[i].body.take() else { continue };
        map_block(&mut body, &|e| {
            let ExprKind::Launch(l) = &e.kind else { return None };
            let k = folds.get(&(l.span.start, l.span.end))?;
            let launch = Launch { target: LaunchTarget::Kernel(*k), ..(**l).clone() };
            Some(Expr { kind: ExprKind::Launch(Box::new(launch)), ..e.clone() })
        });
        module.functions[i].body = Some(body);
    }
}
