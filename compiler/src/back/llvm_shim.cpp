// What cdpc needs of LLVM that LLVM's C API lacks (compiler/src/back/mod.rs
// declares and documents each function).

#include "llvm-c/Core.h"
#include "llvm-c/Error.h"
#include "llvm-c/IRReader.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Plugins/PassPlugin.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>
#include <string>

// Shared with the Clang shim (compiler/src/front/cuda/shim.cpp), which runs Clang in the same
// recovery.
void cdpc_enable_recovery();
std::string cdpc_take_fatal_reason();

namespace {

// The reason of the LLVM fatal error that ended this thread's recovery context, if one did.
thread_local std::string fatal_reason;

// LLVM's fatal errors (`report_fatal_error`: an operation a back end cannot select, NVPTX
// given a PTX version too old for the target, ...) inside a recovery context end that run as a
// crash does, the reason kept: `Process::Exit` hands the exit to the thread's recovery
// context, as Clang's own driver does for an in-process cc1. Outside one LLVM's behaviour is
// kept: its message, then the end of the process.
void on_fatal_error(void *, const char *reason, bool) {
  if (llvm::CrashRecoveryContext::GetCurrent()) {
    fatal_reason = reason;
    llvm::sys::Process::Exit(1);
  }
  llvm::errs() << "LLVM ERROR: " << reason << "\n";
}

// The errors LLVM reported through its context's diagnostic handler during a run.
void collect_errors(LLVMDiagnosticInfoRef info, void *errors) {
  if (LLVMGetDiagInfoSeverity(info) != LLVMDSError)
    return;
  char *description = LLVMGetDiagInfoDescription(info);
  std::string &all = *static_cast<std::string *>(errors);
  if (!all.empty())
    all += "; ";
  all += description;
  LLVMDisposeMessage(description);
}

// Runs `body` on `module` inside a CrashRecoveryContext. False when it crashed (a signal:
// SIGSEGV, SIGABRT from a failed assertion or an `llvm_unreachable`), LLVM stopped on a fatal
// error, or LLVM reported an error through the module's context ("no libcall available for
// ftan": without a handler of the context's, LLVM printed it and ended the process with
// exit(1)); then *reason is what LLVM said (LLVMDisposeMessage), or what ended it. The
// context's other diagnostics (warnings, remarks) are dropped, and its handler is restored
// afterwards. Whatever `body` had allocated is leaked when it did not return.
bool run_recovered(LLVMModuleRef module, llvm::function_ref<void()> body, char **reason) {
  cdpc_enable_recovery();
  fatal_reason.clear();
  LLVMContextRef context = LLVMGetModuleContext(module);
  LLVMDiagnosticHandler previous = LLVMContextGetDiagnosticHandler(context);
  void *previous_data = LLVMContextGetDiagnosticContext(context);
  std::string errors;
  LLVMContextSetDiagnosticHandler(context, collect_errors, &errors);
  llvm::CrashRecoveryContext recovery;
  bool finished = recovery.RunSafely(body);
  LLVMContextSetDiagnosticHandler(context, previous, previous_data);
  if (finished && errors.empty())
    return true;
  // The first cause: an error LLVM reported (after which code generation went on and may
  // have stopped on what it made), else the fatal error's reason, else the crash.
  std::string fatal = cdpc_take_fatal_reason();
  std::string said = !errors.empty() ? errors : fatal;
  if (said.empty())
    said = "a crash (status " + std::to_string(recovery.RetCode) + ")";
  *reason = LLVMCreateMessage(said.c_str());
  return false;
}

} // namespace

// The crash handlers (SIGSEGV, SIGABRT, ...) and LLVM's fatal-error handler, installed once per
// process; a signal outside a recovery context is raised again with the previous handlers.
void cdpc_enable_recovery() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::CrashRecoveryContext::Enable();
    llvm::install_fatal_error_handler(on_fatal_error, nullptr);
  });
}

// The reason of the fatal error that ended this thread's last recovery context, taken ("" when
// none did: a crash, or no failure).
std::string cdpc_take_fatal_reason() {
  std::string reason;
  reason.swap(fatal_reason);
  return reason;
}

extern "C" {

// Moves a global variable to the end of its module's list of global variables; anything else
// (a function, a variable of no module) stays where it is.
void cdpc_move_global_to_end(LLVMValueRef global) {
  auto *variable = llvm::dyn_cast_or_null<llvm::GlobalVariable>(llvm::unwrap(global));
  if (!variable || !variable->getParent())
    return;
  llvm::Module *module = variable->getParent();
  module->removeGlobalVariable(variable);
  module->insertGlobalVariable(variable);
}

// Makes the convergence of `module`'s functions implicit again: every `convergencectrl`
// operand bundle is removed from its call (the call otherwise the same), then the convergence
// intrinsics (`llvm.experimental.convergence.entry`, `.anchor`, `.loop`), whose tokens nothing
// uses any more, are erased. Returns how many calls changed.
size_t cdpc_drop_convergence_control(LLVMModuleRef module) {
  llvm::Module *m = llvm::unwrap(module);
  size_t changed = 0;
  for (llvm::Function &f : *m) {
    std::vector<llvm::CallBase *> bundled;
    for (llvm::Instruction &i : llvm::instructions(f)) {
      auto *call = llvm::dyn_cast<llvm::CallBase>(&i);
      if (call && call->getOperandBundle(llvm::LLVMContext::OB_convergencectrl))
        bundled.push_back(call);
    }
    for (llvm::CallBase *call : bundled) {
      llvm::CallBase *plain = llvm::CallBase::removeOperandBundle(call, llvm::LLVMContext::OB_convergencectrl, call->getIterator());
      plain->takeName(call);
      call->replaceAllUsesWith(plain);
      call->eraseFromParent();
      changed++;
    }
    // Found after the bundles are gone: `llvm.experimental.convergence.loop` carries a bundle
    // of its own, so its call was just replaced, and a pointer taken before would be freed.
    std::vector<llvm::Instruction *> tokens;
    for (llvm::Instruction &i : llvm::instructions(f))
      if (llvm::isa<llvm::ConvergenceControlInst>(&i))
        tokens.push_back(&i);
    // Later tokens first: a loop's token may use the entry's.
    for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
      (*it)->replaceAllUsesWith(llvm::PoisonValue::get((*it)->getType()));
      (*it)->eraseFromParent();
      changed++;
    }
  }
  return changed;
}

// Replaces the initializer of the one global variable of `module` in the section `section`
// by the bytes `bytes` (a constant byte array, of their length): a new variable of that type
// with the old one's name, linkage, section, alignment and other attributes takes its place in
// the module's list and its uses. Returns how many such variables there were: nothing is
// changed unless it is exactly one.
size_t cdpc_replace_section_bytes(LLVMModuleRef module, const char *section, const char *bytes, size_t length) {
  llvm::Module *m = llvm::unwrap(module);
  llvm::GlobalVariable *old = nullptr;
  size_t found = 0;
  for (llvm::GlobalVariable &variable : m->globals())
    if (variable.hasSection() && variable.getSection() == section) {
      old = &variable;
      found++;
    }
  if (found != 1)
    return found;
  auto *value = llvm::ConstantDataArray::getString(m->getContext(), llvm::StringRef(bytes, length), /*AddNull=*/false);
  auto *variable = new llvm::GlobalVariable(*m, value->getType(), old->isConstant(), old->getLinkage(), value, "", old,
                                            old->getThreadLocalMode(), old->getAddressSpace());
  variable->copyAttributesFrom(old);
  variable->takeName(old);
  old->replaceAllUsesWith(variable);
  old->eraseFromParent();
  return 1;
}

// Parses IR text or bitcode as LLVMParseIRInContext does (taking the buffer), inside a
// CrashRecoveryContext: LLVM's bitcode reader is not proof against every malformed file (a
// mutated one crashed it in parseFunctionBody). 0: parsed, the module in *module; 1: refused,
// LLVM's message in *message (LLVMDisposeMessage); 2: the reader crashed, and the context may
// be left half-written: the caller must neither use nor dispose of it.
int cdpc_parse_ir_safely(LLVMContextRef context, LLVMMemoryBufferRef buffer, LLVMModuleRef *module, char **message) {
  cdpc_enable_recovery();
  *module = nullptr;
  *message = nullptr;
  LLVMBool failed = 1;
  llvm::CrashRecoveryContext recovery;
  if (!recovery.RunSafely([&] { failed = LLVMParseIRInContext(context, buffer, module, message); }))
    return 2;
  return failed ? 1 : 0;
}

// Writes `module`'s code for `machine` (assembly or an object) into a new buffer, as
// LLVMTargetMachineEmitToMemoryBuffer does, inside a CrashRecoveryContext: NVPTX stops the
// process on operations it cannot select (`frem` of `fp128`: "unsupported library call
// operation"), which IR a user hands cdpc may hold. 0: written, the buffer in *out; 1: LLVM
// refused, its message in *message; 2: LLVM stopped, crashed or reported an error, the reason in
// *message (both LLVMDisposeMessage). After 2 the module may be half-lowered: it is only fit to be
// disposed of.
int cdpc_emit_safely(LLVMTargetMachineRef machine, LLVMModuleRef module, LLVMCodeGenFileType kind, LLVMMemoryBufferRef *out,
                     char **message) {
  *out = nullptr;
  *message = nullptr;
  LLVMBool failed = 1;
  char *refused = nullptr;
  bool finished = run_recovered(module, [&] { failed = LLVMTargetMachineEmitToMemoryBuffer(machine, module, kind, &refused, out); }, message);
  if (!finished) {
    // What LLVM wrote before its error, if it finished at all, is not the module's code.
    if (*out)
      LLVMDisposeMemoryBuffer(*out);
    *out = nullptr;
    if (refused)
      LLVMDisposeMessage(refused);
    return 2;
  }
  if (failed) {
    *message = refused;
    return 1;
  }
  return 0;
}

// Runs the new pass manager's `passes` on `module` with default options, as LLVMRunPasses
// does, inside a CrashRecoveryContext; the statuses and the message as cdpc_emit_safely's.
int cdpc_run_passes_safely(LLVMModuleRef module, const char *passes, LLVMTargetMachineRef machine, char **message) {
  *message = nullptr;
  LLVMErrorRef error = nullptr;
  LLVMPassBuilderOptionsRef options = LLVMCreatePassBuilderOptions();
  bool finished = run_recovered(module, [&] { error = LLVMRunPasses(module, passes, machine, options); }, message);
  LLVMDisposePassBuilderOptions(options);
  if (!finished) {
    if (error)
      LLVMConsumeError(error);
    return 2;
  }
  if (error) {
    char *said = LLVMGetErrorMessage(error);
    *message = LLVMCreateMessage(said);
    LLVMDisposeErrorMessage(said);
    return 1;
  }
  return 0;
}

// Makes the target machine's objects list their constructors in `.init_array`, as GCC's and
// Clang's (`-fuse-init-array`, Clang's default on Linux) do, where LLVM's own default is
// `.ctors`, which the linker runs in reverse order. Read when an object is written.
void cdpc_use_init_array(LLVMTargetMachineRef machine) {
  reinterpret_cast<llvm::TargetMachine *>(machine)->Options.UseInitArray = true;
}

} // extern "C"

// What the static link leaves out. llvm-sys wraps LLVM's `InitializeAll*` and
// `InitializeNative*` in one object, which inkwell's `Target::initialize_all` refers to; the
// linker, taking that object, took every back end LLVM was built with (AArch64, AMDGPU, ...)
// and their static constructors, run at every start though cdpc never selects them. Clang's
// `BackendUtil` registers each of LLVM's built-in extensions (`llvm/Support/Extension.def`:
// Polly, where Debian builds it in), which took Polly and its constructors. The definitions
// below come first in the link, so neither object is taken: "all" targets are the two cdpc
// compiles for (NVPTX for the device, x86-64 for the host side), and Polly registers nothing
// (no cdpc option or Clang option it passes turns it on). Measured 2026-12-03 (2-core
// development machine): 685 static constructors -> 418, the binary 125.3 -> 114.4 MB,
// `cdpc --version` 11.6 -> 9.7 ms of CPU (`perf stat -r 30`); a compilation's wall-clock
// time the same within noise (0.993 over six samples, `bench/compile-ab/ab.py`, 20 rounds).
extern "C" {
void LLVM_InitializeAllTargetInfos(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeX86TargetInfo();
}
void LLVM_InitializeAllTargets(void) {
  LLVMInitializeNVPTXTarget();
  LLVMInitializeX86Target();
}
void LLVM_InitializeAllTargetMCs(void) {
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeX86TargetMC();
}
void LLVM_InitializeAllAsmPrinters(void) {
  LLVMInitializeNVPTXAsmPrinter();
  LLVMInitializeX86AsmPrinter();
}
void LLVM_InitializeAllAsmParsers(void) { LLVMInitializeX86AsmParser(); }
void LLVM_InitializeAllDisassemblers(void) { LLVMInitializeX86Disassembler(); }

// The native target where it is x86-64, the host cdpc compiles for; failure (true) elsewhere.
#if defined(__x86_64__)
LLVMBool LLVM_InitializeNativeTarget(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  return 0;
}
LLVMBool LLVM_InitializeNativeAsmParser(void) {
  LLVMInitializeX86AsmParser();
  return 0;
}
LLVMBool LLVM_InitializeNativeAsmPrinter(void) {
  LLVMInitializeX86AsmPrinter();
  return 0;
}
LLVMBool LLVM_InitializeNativeDisassembler(void) {
  LLVMInitializeX86Disassembler();
  return 0;
}
#else
LLVMBool LLVM_InitializeNativeTarget(void) { return 1; }
LLVMBool LLVM_InitializeNativeAsmParser(void) { return 1; }
LLVMBool LLVM_InitializeNativeAsmPrinter(void) { return 1; }
LLVMBool LLVM_InitializeNativeDisassembler(void) { return 1; }
#endif
} // extern "C"

// Polly's registration, as Clang's `BackendUtil` calls it: nothing registered.
llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly", LLVM_VERSION_STRING, [](llvm::PassBuilder &) {}};
}
