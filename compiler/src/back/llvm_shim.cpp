// What cdpc needs of LLVM that LLVM's C API lacks (compiler/src/back/mod.rs
// declares and documents each function).

#include "llvm-c/Core.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"

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

} // extern "C"
