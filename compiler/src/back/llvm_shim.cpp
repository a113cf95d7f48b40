// What cdpc needs of LLVM that LLVM's C API lacks (compiler/src/back/mod.rs
// declares and documents each function).

#include "llvm-c/Core.h"
#include "llvm-c/IRReader.h"
#include "llvm-c/TargetMachine.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Target/TargetMachine.h"

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
  // The crash handlers (SIGSEGV, SIGABRT, ...) are installed once per process; a signal
  // outside a recovery context is raised again with the previous handlers.
  llvm::CrashRecoveryContext::Enable();
  *module = nullptr;
  *message = nullptr;
  LLVMBool failed = 1;
  llvm::CrashRecoveryContext recovery;
  if (!recovery.RunSafely([&] { failed = LLVMParseIRInContext(context, buffer, module, message); }))
    return 2;
  return failed ? 1 : 0;
}

// Makes the target machine's objects list their constructors in `.init_array`, as GCC's and
// Clang's (`-fuse-init-array`, Clang's default on Linux) do, where LLVM's own default is
// `.ctors`, which the linker runs in reverse order. Read when an object is written.
void cdpc_use_init_array(LLVMTargetMachineRef machine) {
  reinterpret_cast<llvm::TargetMachine *>(machine)->Options.UseInitArray = true;
}

} // extern "C"
