// Clang's CUDA compilation in cdpc's process: what `clang++ ARGS` does, without a process.
//
// The C ABI is `cdpc_clang_run` (compiler/src/clang/in_process.rs declares and documents it).
// Clang's driver turns the arguments into its jobs, as the `clang++` program does; each job
// must be one Clang front-end run (`clang -cc1`), which runs here through
// the body of `clang -cc1` (its actions that write bitcode or a precompiled header), inside a CrashRecoveryContext. Every
// message of the driver and of the front end goes to the caller as data (level, file, line,
// column, text with its `[-Wflag]`), never to stderr.

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticIDs.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Driver/Compilation.h"
#include "clang/Driver/Driver.h"
#include "clang/Driver/Job.h"
#include "clang/Driver/Tool.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/CodeGen/CodeGenAction.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Frontend/MultiplexConsumer.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/SemaConsumer.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
void LLVMInitializeNVPTXTargetInfo(void);
void LLVMInitializeNVPTXTarget(void);
void LLVMInitializeNVPTXTargetMC(void);
void LLVMInitializeNVPTXAsmPrinter(void);
void LLVMInitializeX86TargetInfo(void);
void LLVMInitializeX86Target(void);
void LLVMInitializeX86TargetMC(void);
void LLVMInitializeX86AsmPrinter(void);
void LLVMInitializeX86AsmParser(void);

// level: 0 note, 1 remark, 2 warning, 3 error, 4 fatal error. file is null (and line and
// column 0) for a message without a place. Strings are valid during the call only.
typedef void (*cdpc_clang_diag_fn)(void *user, int level, const char *file, unsigned line, unsigned column,
                                   const char *message);

// Results of cdpc_clang_run.
enum { CDPC_CLANG_OK = 0, CDPC_CLANG_ERRORS = 1, CDPC_CLANG_CRASHED = 2, CDPC_CLANG_UNSUPPORTED_JOB = 3 };

int cdpc_clang_run(const char *const *args, size_t nargs, cdpc_clang_diag_fn on_diag, void *user);
}

namespace {

// Hands each message to the caller. Notes follow the message they belong to, as Clang emits them.
class Forward : public clang::DiagnosticConsumer {
public:
  Forward(cdpc_clang_diag_fn on_diag, void *user) : on_diag(on_diag), user(user) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic &info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    int code;
    switch (level) {
    case clang::DiagnosticsEngine::Ignored:
      return;
    case clang::DiagnosticsEngine::Note:
      code = 0;
      break;
    case clang::DiagnosticsEngine::Remark:
      code = 1;
      break;
    case clang::DiagnosticsEngine::Warning:
      code = 2;
      break;
    case clang::DiagnosticsEngine::Error:
      code = 3;
      break;
    default:
      code = 4;
      break;
    }
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    // The flag that controls it, as Clang's text printer shows it (`-fdiagnostics-show-option`).
    if (level == clang::DiagnosticsEngine::Warning || level == clang::DiagnosticsEngine::Remark) {
      llvm::StringRef flag = info.getDiags()->getDiagnosticIDs()->getWarningOptionForDiag(info.getID());
      if (!flag.empty()) {
        text += level == clang::DiagnosticsEngine::Remark ? " [-R" : " [-W";
        text += flag;
        text += "]";
      }
    }
    std::string file;
    unsigned line = 0, column = 0;
    if (info.getLocation().isValid() && info.hasSourceManager()) {
      clang::PresumedLoc at = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (at.isValid()) {
        file = at.getFilename();
        line = at.getLine();
        column = at.getColumn();
      }
    }
    on_diag(user, code, file.empty() ? nullptr : file.c_str(), line, column, text.c_str());
  }

  // A fatal message without a place, for what the in-process compilation cannot do.
  void unsupported(const std::string &what) {
    std::string text = "cdpc runs Clang in its own process and cannot do this: " + what;
    on_diag(user, 4, nullptr, 0, 0, text.c_str());
    unsupported_job = true;
  }

  bool unsupported_job = false;

private:
  cdpc_clang_diag_fn on_diag;
  void *user;
};

// Keeps a precompiled header's list of declarations "to check for deferred diagnostics" to
// those that can matter. In CUDA, Sema records every device-side function body whose emission
// is not ruled out; at the end of every compilation that uses the header, Clang's ASTReader
// deserializes each recorded declaration (`ReadDeclsToCheckForDeferredDiags`) before
// `Sema::emitDeferredDiags` looks at them, which for the CUDA wrapper's thousands of inline
// functions was most of a small `.cu` file's front-end time (perf: 54% of Clang's thread).
// The check starts only from roots whose emission status is `Emitted` (a function with
// `ShouldEmitRootNode` false returns at once, Clang 22's SemaDecl.cpp), and reaches callees by
// walking those roots' bodies; an inline or template function is never such a root. So a
// function in a system header (the wrapper, libstdc++, CCCL, CUDA's headers) that is not
// `Emitted` when the header is made is dropped from the list, and everything else (the user's
// own headers' functions, variables, the emitted roots) is kept: the compilation's diagnostics
// are the same. (What a precompiled header loses anyway is the deferred diagnostics themselves:
// Clang's ASTWriter writes the roots, `DECLS_TO_CHECK_FOR_DEFERRED_DIAGS`, but not
// `Sema::DeviceDeferredDiags`, the messages recorded while a function's body was parsed, so a
// header function's "reference to __host__ function" is not reported when the header is
// precompiled and the call stays unresolved in the IR. compiler/src/driver/cuda.rs compiles such
// a file again without precompiled headers; compiler/tests/preamble_cache.rs.)
class PruneDeferredDiagnosticRoots : public clang::SemaConsumer {
public:
  void InitializeSema(clang::Sema &s) override { sema = &s; }
  void ForgetSema() override { sema = nullptr; }
  void HandleTranslationUnit(clang::ASTContext &context) override {
    if (!sema)
      return;
    const clang::SourceManager &sources = context.getSourceManager();
    llvm::SmallSetVector<clang::Decl *, 4> kept;
    for (clang::Decl *decl : sema->DeclsToCheckForDeferredDiags) {
      auto *function = llvm::dyn_cast<clang::FunctionDecl>(decl);
      if (function && sources.isInSystemHeader(function->getLocation()) &&
          sema->getEmissionStatus(function) != clang::Sema::FunctionEmissionStatus::Emitted)
        continue;
      kept.insert(decl);
    }
    sema->DeclsToCheckForDeferredDiags = std::move(kept);
  }

private:
  clang::Sema *sema = nullptr;
};

// Clang's `-emit-pch`, with the list above pruned before the header is written (the consumers
// run in order: the pruning first, then Clang's writer).
class GeneratePrunedPCHAction : public clang::GeneratePCHAction {
protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance &instance, llvm::StringRef file) override {
    std::unique_ptr<clang::ASTConsumer> writer = clang::GeneratePCHAction::CreateASTConsumer(instance, file);
    if (!writer)
      return nullptr;
    std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
    consumers.push_back(std::make_unique<PruneDeferredDiagnosticRoots>());
    consumers.push_back(std::move(writer));
    return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
  }
};

std::once_flag initialised;

void initialise() {
  // The targets a CUDA compilation's two sides generate code for (registering twice is a no-op
  // in LLVM, so cdpc's own initialisation and this one do not conflict).
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeX86AsmParser();
  // A crash in Clang (SIGSEGV, SIGABRT from an assertion, ...) inside RunSafely returns there
  // instead of ending the process. The handlers stay installed; a signal outside a recovery
  // context restores the previous handlers and is raised again.
  llvm::CrashRecoveryContext::Enable();
}

// One `clang -cc1` job, as the clang program's cc1_main runs it, minus its process-wide setup
// (targets, `-mllvm` options, plugins).
bool run_cc1(const llvm::opt::ArgStringList &cc1_args, const char *argv0, Forward &forward) {
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  clang::DiagnosticOptions parse_options;
  clang::DiagnosticsEngine parse_diags(clang::DiagnosticIDs::create(), parse_options, &forward, false);
  // The driver's arguments start with `-cc1`.
  llvm::ArrayRef<const char *> args(cc1_args);
  if (!args.empty() && llvm::StringRef(args.front()) == "-cc1")
    args = args.drop_front();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, args, parse_diags, argv0))
    return false;
  // The driver asks the front end to leak its AST and module for a short-lived process; cdpc
  // (and the Python package) live on, so everything is freed.
  invocation->getFrontendOpts().DisableFree = false;
  invocation->getCodeGenOpts().DisableFree = false;
  clang::CompilerInstance instance(std::move(invocation));
  instance.createVirtualFileSystem(llvm::vfs::getRealFileSystem(), &forward);
  instance.createDiagnostics(&forward, false);
  if (!instance.hasDiagnostics())
    return false;
  // The actions cdpc's arguments ask for (`-emit-llvm -c`, `-Xclang -emit-pch`); `clang -cc1`'s
  // other actions (the static analyser, rewriters, ...) are not linked.
  std::unique_ptr<clang::FrontendAction> action;
  switch (instance.getFrontendOpts().ProgramAction) {
  case clang::frontend::EmitBC:
    action = std::make_unique<clang::EmitBCAction>();
    break;
  case clang::frontend::EmitLLVM:
    action = std::make_unique<clang::EmitLLVMAction>();
    break;
  case clang::frontend::GeneratePCH:
    action = std::make_unique<GeneratePrunedPCHAction>();
    break;
  default:
    forward.unsupported("a Clang action other than writing LLVM IR or a precompiled header");
    return false;
  }
  // `-mllvm` options are LLVM's process-wide settings, which would change cdpc's own pipeline
  // too (and differently before and after the first CUDA C++ file). For NVPTX the driver adds
  // `-enable-memcpyopt-without-libcalls` (memcpyopt forms memcpy/memset, which NVPTX lowers
  // itself); in process it is left out, so Clang skips memcpyopt on the device side as cdpc's
  // own pipeline does (no libcalls on NVPTX). Any other is refused.
  for (const std::string &arg : instance.getFrontendOpts().LLVMArgs) {
    if (arg != "-enable-memcpyopt-without-libcalls") {
      forward.unsupported("the LLVM option `-mllvm " + arg + "` (a process-wide setting)");
      return false;
    }
  }
  return instance.ExecuteAction(*action);
}

} // namespace

extern "C" int cdpc_clang_run(const char *const *args, size_t nargs, cdpc_clang_diag_fn on_diag, void *user) {
  std::call_once(initialised, initialise);
  Forward forward(on_diag, user);
  // The driver reads `clang++`'s arguments, in C++ mode (`--driver-mode=g++`, as `clang++`).
  std::vector<const char *> argv;
  argv.push_back("clang++");
  argv.push_back("--driver-mode=g++");
  argv.insert(argv.end(), args, args + nargs);

  int result = CDPC_CLANG_OK;
  llvm::CrashRecoveryContext recovery;
  bool finished = recovery.RunSafely([&] {
    // The test of crash recovery (compiler/tests/cuda_cxx.rs) defines this macro: Clang's
    // failed assertions end in abort(), as this does.
    for (const char *arg : argv)
      if (llvm::StringRef(arg) == "-DCDPC_TEST_CLANG_CRASH")
        abort();
    // The driver's messages obey the arguments' `-W` options, as in the clang program.
    std::unique_ptr<clang::DiagnosticOptions> options = clang::CreateAndPopulateDiagOpts(argv);
    clang::DiagnosticsEngine diags(clang::DiagnosticIDs::create(), *options, &forward, false);
    llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> files = llvm::vfs::getRealFileSystem();
    clang::ProcessWarningOptions(diags, *options, *files, /*ReportDiags=*/false);
    clang::driver::Driver driver(argv[0], llvm::sys::getDefaultTargetTriple(), diags, "cdpc", files);
    std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
    if (!compilation || diags.hasErrorOccurred() || compilation->containsError()) {
      result = CDPC_CLANG_ERRORS;
      return;
    }
    for (const clang::driver::Command &job : compilation->getJobs()) {
      if (llvm::StringRef(job.getCreator().getName()) != "clang") {
        forward.unsupported(std::string("a job of `") + job.getCreator().getName() + "` besides Clang's front end");
        result = CDPC_CLANG_UNSUPPORTED_JOB;
        return;
      }
      if (!run_cc1(job.getArguments(), argv[0], forward) || forward.getNumErrors() > 0) {
        result = forward.unsupported_job ? CDPC_CLANG_UNSUPPORTED_JOB : CDPC_CLANG_ERRORS;
        return;
      }
    }
  });
  if (!finished)
    return CDPC_CLANG_CRASHED;
  return result;
}
