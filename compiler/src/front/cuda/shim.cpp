// Clang's CUDA compilation in cdpc's process: what `clang++ ARGS` does, without a process.
//
// The C ABI is `cdpc_clang_run` (compiler/src/front/cuda/in_process.rs declares and documents it).
// Clang's driver turns the arguments into its jobs, as the `clang++` program does; each job
// must be one Clang front-end run (`clang -cc1`), which runs here through
// the body of `clang -cc1` (its actions that write bitcode, a precompiled header or preprocessed source), inside a CrashRecoveryContext. Every
// message of the driver and of the front end goes to the caller as data (level, file, line,
// column, text with its `[-Wflag]`), never to stderr. The device side's compilation skips the
// bodies of the C++ standard library's host functions, which it never needs (SkipLibraryBodies).

#include <algorithm>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclFriend.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticIDs.h"
#include "clang/Basic/DiagnosticSema.h"
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
#include "clang/Lex/Lexer.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/SemaConsumer.h"
#include "clang/Sema/TemplateInstCallback.h"
#include "llvm-c/Target.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

// LLVM's crash recovery and fatal-error handler, shared with cdpc's own code generation
// (compiler/src/back/llvm_shim.cpp).
void cdpc_enable_recovery();
std::string cdpc_take_fatal_reason();

extern "C" {
// level: 0 note, 1 remark, 2 warning, 3 error, 4 fatal error. file is null (and line and
// column 0) for a message without a place. Strings are valid during the call only.
typedef void (*cdpc_clang_diag_fn)(void *user, int level, const char *file, unsigned line, unsigned column,
                                   const char *message);

// The source filter (compiler/src/front/cuda/nvcc_text.rs): `test` says whether a file's text may
// need rewriting; `rewrite` calls `take(user, new_text, new_len)` once when the text changes
// (never shorter than the file) and returns 1, else 0.
typedef int (*cdpc_source_test_fn)(const char *text, size_t len);
typedef void (*cdpc_source_take_fn)(void *user, const char *text, size_t len);
typedef int (*cdpc_source_rewrite_fn)(const char *text, size_t len, cdpc_source_take_fn take, void *user);

// Results of cdpc_clang_run.
enum { CDPC_CLANG_OK = 0, CDPC_CLANG_ERRORS = 1, CDPC_CLANG_CRASHED = 2, CDPC_CLANG_UNSUPPORTED_JOB = 3 };

int cdpc_clang_run(const char *const *args, size_t nargs, cdpc_clang_diag_fn on_diag, void *user,
                   cdpc_source_test_fn source_test, cdpc_source_rewrite_fn source_rewrite);
}

namespace {

// Hands each message to the caller. Notes follow the message they belong to, as Clang emits them.
class Forward : public clang::DiagnosticConsumer {
public:
  Forward(cdpc_clang_diag_fn on_diag, void *user) : on_diag(on_diag), user(user) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic &info) override {
    // A note belongs to the message before it: it goes where that one went.
    if (level == clang::DiagnosticsEngine::Note && dropping)
      return;
    dropping = level != clang::DiagnosticsEngine::Note && from_system_header(level, info);
    if (dropping)
      return;
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
    Held message{code, {}, 0, 0, std::string(text), info.getLocation()};
    if (forgive_host_calls)
      mark_host_call(level, info, message);
    if (info.getLocation().isValid() && info.hasSourceManager()) {
      clang::PresumedLoc at = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (at.isValid()) {
        message.file = at.getFilename();
        message.line = at.getLine();
        message.column = at.getColumn();
      }
    }
    if (holding) {
      held_errors += level >= clang::DiagnosticsEngine::Error;
      held_host_calls += message.host_call;
      held.push_back(std::move(message));
    } else {
      send(message);
    }
  }

  // Keeps the messages from here on until `release` hands them to the caller or `discard`
  // forgets them (and the counts of errors and warnings).
  void hold() { holding = true; }
  void release() {
    holding = false;
    for (const Held &message : held)
      send(message);
    held.clear();
    held_errors = held_host_calls = 0;
  }
  void discard() {
    holding = false;
    held.clear();
    held_errors = held_host_calls = 0;
    clear();
  }

  // Whether a warning is held.
  bool holds_warnings() const {
    return std::any_of(held.begin(), held.end(), [](const Held &m) { return m.level == 2; });
  }

  // Forgets the held warnings, with their notes, whose place `inside` takes (a `SourceLocation`
  // of this run).
  template <typename Inside> void drop_warnings(Inside inside) {
    std::vector<Held> kept;
    bool dropping_notes = false;
    for (Held &m : held) {
      if (m.level != 0)
        dropping_notes = m.level == 2 && m.loc.isValid() && inside(m.loc);
      if (!dropping_notes) {
        kept.push_back(std::move(m));
      } else if (m.level == 2 && NumWarnings > 0) {
        --NumWarnings;
      }
    }
    held = std::move(kept);
    last_error = SIZE_MAX;
  }

  // A fatal message without a place, for what the in-process compilation cannot do.
  void unsupported(const std::string &what) {
    std::string text = "cdpc runs Clang in its own process and cannot do this: " + what;
    on_diag(user, 4, nullptr, 0, 0, text.c_str());
    unsupported_job = true;
  }

  bool unsupported_job = false;

  // nvcc's device pass does not look at calls from host code: a host function's body, or a
  // host variable's initializer, that calls a `__device__` function (one that exists only when
  // `__CUDA_ARCH__` is defined, the host side having a macro of the same name: ccminer's
  // `cuda_swab64`, `ROTL64`) compiles with nvcc, where Clang's device pass refuses the call
  // ("no matching function ...: call to __device__ function from __host__ function"). Such a
  // function or variable is never emitted on the device side, and the host pass, which checks
  // the same code without `__CUDA_ARCH__`, still refuses a real mistake. With
  // `forgive_host_calls` (set for device-side runs), each error that is such a call is marked;
  // `forgive` drops them, with their notes, when they are all the run's errors.
  bool forgive_host_calls = false;

  // Whether the run compiles the device side.
  bool device_side = false;

  // The front end's Sema while a run parses (SemaForForward), for where a message arises.
  clang::Sema *sema = nullptr;

  // Whether every error held is a call from host code to device code (and there is one).
  bool only_host_calls() const { return held_errors > 0 && held_errors == held_host_calls; }

  // Whether the run stopped at Clang's limit of errors with only such calls before it: a run
  // without the limit can then forgive them all.
  bool stopped_at_limit_by_host_calls() const {
    bool any = false;
    for (const Held &m : held) {
      if (m.level == 4 && m.text.rfind("too many errors emitted", 0) == 0)
        continue;
      if (m.level >= 3 && !m.host_call)
        return false;
      any |= m.level >= 3;
    }
    return any;
  }

  // Drops the held errors that are calls from host code (and the notes after each), and makes
  // the narrowings nvcc warns of warnings.
  void forgive() {
    std::vector<Held> kept;
    bool skipping = false;
    for (Held &m : held) {
      if (m.level != 0)
        skipping = m.host_call && !m.as_warning;
      if (m.level >= 3 && m.host_call && NumErrors > 0) {
        --NumErrors;
        if (m.as_warning) {
          m.level = 2;
          m.text += " [-Wc++11-narrowing]";
          ++NumWarnings;
        }
      }
      if (skipping)
        continue;
      kept.push_back(std::move(m));
    }
    held = std::move(kept);
    held_errors -= held_host_calls;
    held_host_calls = 0;
  }

  // Whether the compilation asked for warnings in system headers (`-Wsystem-headers`), as its
  // front end's engine says once the warning options are applied: set for each front-end run.
  bool system_header_warnings = false;

private:
  // A warning (or remark) located in a system header that Clang shows only because its
  // instantiation began in the program's code: Clang 18 and later lift the suppression of
  // system headers' warnings while they report a deprecated declaration used inside a
  // template instantiated from user code (SemaAvailability's AllowWarningInSystemHeaders,
  // llvm-project#70353), so `std::stable_sort` warned that libstdc++'s own
  // `get_temporary_buffer` is deprecated (llvm-project#76515), which neither nvcc nor its host
  // compiler (GCC) says, and `-Wno-system-headers` does not turn off (llvm-project#183470).
  // The message's level is asked again with the suppression on: a warning Clang shows in
  // system headers by itself (`#warning`, `-Wdelete-non-virtual-dtor`, the back end's) stays,
  // as does every error (also a warning made one by `-Werror`: the compilation fails on it).
  bool from_system_header(clang::DiagnosticsEngine::Level level, const clang::Diagnostic &info) const {
    if (system_header_warnings || (level != clang::DiagnosticsEngine::Warning && level != clang::DiagnosticsEngine::Remark))
      return false;
    if (!info.getLocation().isValid() || !info.hasSourceManager())
      return false;
    const clang::SourceManager &sources = info.getSourceManager();
    if (!sources.isInSystemHeader(sources.getExpansionLoc(info.getLocation())))
      return false;
    // The engine is the front end's own (Clang hands its consumer a const view).
    auto &engine = const_cast<clang::DiagnosticsEngine &>(*info.getDiags());
    bool suppressed = engine.getSuppressSystemWarnings();
    engine.setSuppressSystemWarnings(true);
    bool ignored = engine.getDiagnosticLevel(info.getID(), info.getLocation()) == clang::DiagnosticsEngine::Ignored;
    engine.setSuppressSystemWarnings(suppressed);
    return ignored;
  }

  // Whether the last message other than a note was dropped (its notes go with it).
  bool dropping = false;

  struct Held {
    int level;
    std::string file;
    unsigned line, column;
    std::string text;
    // Where it arose, while the run lasts (`drop_warnings`).
    clang::SourceLocation loc;
    // An error that nvcc does not give (`forgive_host_calls`): a call (or reference) from host
    // code to a `__device__` function, dropped; or a narrowing it warns of (`as_warning`).
    bool host_call = false;
    bool as_warning = false;
  };

  // The error a note belongs to, while notes follow it (index in `held`).
  size_t last_error = SIZE_MAX;
  // The errors held, and those of them that are calls from host code.
  size_t held_errors = 0, held_host_calls = 0;

  static bool narrowing(unsigned id) {
    return id == clang::diag::ext_init_list_type_narrowing || id == clang::diag::ext_init_list_type_narrowing_const_reference ||
           id == clang::diag::ext_init_list_constant_narrowing || id == clang::diag::ext_init_list_constant_narrowing_const_reference ||
           id == clang::diag::ext_init_list_variable_narrowing || id == clang::diag::ext_init_list_variable_narrowing_const_reference;
  }

  // Whether the message points at a literal (`0.0`, `-1.5`): a constant, which g++ refuses to
  // narrow, where Clang's "type ... cannot be narrowed" is given for constants and variables
  // alike (a floating value into an integer).
  bool literal_at(const clang::Diagnostic &info) const {
    if (!sema || !info.getLocation().isValid() || !info.hasSourceManager())
      return false;
    const clang::SourceManager &sources = info.getSourceManager();
    clang::SourceLocation at = sources.getSpellingLoc(info.getLocation());
    for (int i = 0; i < 4; ++i) {
      clang::Token token;
      if (clang::Lexer::getRawToken(at, token, sources, sema->getLangOpts(), /*IgnoreWhiteSpace=*/true))
        return false;
      if (token.isOneOf(clang::tok::numeric_constant, clang::tok::char_constant))
        return true;
      if (!token.isOneOf(clang::tok::minus, clang::tok::plus, clang::tok::l_paren))
        return false;
      at = token.getEndLoc();
    }
    return false;
  }

  // Whether the parse is inside a `__global__` or `__device__` (not also `__host__`) function
  // or lambda.
  bool in_device_code() const {
    const clang::FunctionDecl *function = sema ? sema->getCurFunctionDecl(/*AllowLambda=*/true) : nullptr;
    return function && (function->hasAttr<clang::CUDAGlobalAttr>() ||
                        (function->hasAttr<clang::CUDADeviceAttr>() && !function->hasAttr<clang::CUDAHostAttr>()));
  }

  // Caller targets as Clang's CUDA messages number them (`%select{__device__|__global__|__host__|...}`).
  static bool host_target(const clang::Diagnostic &info, unsigned arg) {
    if (info.getNumArgs() <= arg)
      return false;
    switch (info.getArgKind(arg)) {
    case clang::DiagnosticsEngine::ak_sint:
      return info.getArgSInt(arg) == 2;
    case clang::DiagnosticsEngine::ak_uint:
      return info.getArgUInt(arg) == 2;
    default:
      return false;
    }
  }

  // Marks `message` (or the error its note belongs to) as a call from host code (above).
  void mark_host_call(clang::DiagnosticsEngine::Level level, const clang::Diagnostic &info, Held &message) {
    unsigned id = info.getID();
    if (level == clang::DiagnosticsEngine::Note) {
      if (id == clang::diag::note_ovl_candidate_bad_target && host_target(info, 4) && last_error < held.size() &&
          !held[last_error].host_call) {
        held[last_error].host_call = true;
        ++held_host_calls;
      }
      return;
    }
    last_error = SIZE_MAX;
    if (level < clang::DiagnosticsEngine::Error || !holding)
      return;
    if (narrowing(id)) {
      // nvcc warns (#2361-D) where device code narrows, as g++ does where host code narrows
      // a variable's value; g++ refuses a host constant that narrows.
      message.host_call = message.as_warning =
          id == clang::diag::ext_init_list_variable_narrowing || id == clang::diag::ext_init_list_variable_narrowing_const_reference ||
          in_device_code() || (!literal_at(info) && id != clang::diag::ext_init_list_constant_narrowing &&
                               id != clang::diag::ext_init_list_constant_narrowing_const_reference);
      return;
    }
    // Calls from host code are the device side's alone: the host side refuses them as nvcc does.
    if (!device_side)
      return;
    if (id == clang::diag::err_ref_bad_target)
      message.host_call = host_target(info, 3);
    else if (id == clang::diag::err_ref_bad_target_global_initializer)
      message.host_call = true;
    // The overload errors wait for their notes: a candidate not viable for the call from
    // host code marks them.
    if (id == clang::diag::err_ovl_no_viable_function_in_call || id == clang::diag::err_ovl_no_viable_member_function_in_call ||
        id == clang::diag::err_ovl_no_viable_object_call || id == clang::diag::err_ovl_no_viable_oper ||
        id == clang::diag::err_ovl_no_viable_function_in_init)
      last_error = held.size();
  }
  void send(const Held &m) { on_diag(user, m.level, m.file.empty() ? nullptr : m.file.c_str(), m.line, m.column, m.text.c_str()); }

public:
  // LLVM's fatal error that ended the run (llvm_shim.cpp's `on_fatal_error`), as an error message of its own.
  void stopped(const std::string &reason) { send(Held{3, {}, 0, 0, "LLVM stopped: " + reason}); }

private:

  cdpc_clang_diag_fn on_diag;
  void *user;
  bool holding = false;
  std::vector<Held> held;
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
    // On the host side no compilation checks the IR for what the header's lost deferred
    // diagnostics would have said (the device side does, compiler/src/driver/cuda.rs): a
    // header that holds any is not made (an error that says so, which cdpc recognises,
    // HOST_DEFERRED_DIAGNOSTICS in compiler/src/driver/cuda.rs), and the host side parses
    // those headers itself.
    if (!context.getLangOpts().CUDAIsDevice) {
      size_t deferred = 0;
      for (const auto &entry : sema->DeviceDeferredDiags)
        deferred += !entry.second.empty();
      if (deferred) {
        clang::DiagnosticsEngine &diags = context.getDiagnostics();
        diags.Report(diags.getCustomDiagID(clang::DiagnosticsEngine::Error,
                                           "cdpc: not precompiled: the host side holds deferred diagnostics of %0 function(s)"))
            << static_cast<unsigned>(deferred);
        return;
      }
    }
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
    drop_unused_in_system_headers(context);
  }

  // The same for Sema's "unused file-scoped declarations" (`static` functions and variables
  // not used yet): at the end of every compilation that uses the header, Clang deserializes
  // each one the header recorded (`ReadUnusedFileScopedDecls`) to warn about those still
  // unused (-Wunused-function, -Wunused-variable, -Wunneeded-internal-declaration); for the
  // CUDA wrapper's headers that was 45% of Clang's thread on a one-kernel `.cu` file (perf,
  // 2026-12-03). A warning at a declaration in a system header is never shown unless
  // -Wsystem-headers asks for them, so those are dropped from the list, the rest (the user's
  // own headers' in a preamble) kept: the compilation's diagnostics are the same.
  void drop_unused_in_system_headers(clang::ASTContext &context) {
    if (!context.getDiagnostics().getSuppressSystemWarnings())
      return;
    const clang::SourceManager &sources = context.getSourceManager();
    auto &unused = sema->UnusedFileScopedDecls;
    std::vector<const clang::DeclaratorDecl *> kept;
    for (auto it = unused.begin(nullptr, true), end = unused.end(); it != end; ++it)
      if (!sources.isInSystemHeader((*it)->getLocation()))
        kept.push_back(*it);
    unused.erase(unused.begin(nullptr, true), unused.end());
    for (const clang::DeclaratorDecl *decl : kept)
      unused.push_back(decl);
  }

private:
  clang::Sema *sema = nullptr;
};

// Whether the command line defines the macro `name` (`-D`, the last of `-D` and `-U` counting).
bool macro_defined(const clang::PreprocessorOptions &options, llvm::StringRef name) {
  bool is = false;
  for (const auto &[macro, undefined] : options.Macros)
    if (llvm::StringRef(macro).split('=').first == name)
      is = !undefined;
  return is;
}

// `first`, then `action`'s own consumer (Clang runs a multiplexed list in order), or nothing
// when the action could not make its own.
std::unique_ptr<clang::ASTConsumer> in_front(std::unique_ptr<clang::ASTConsumer> first, std::unique_ptr<clang::ASTConsumer> action) {
  if (!action)
    return nullptr;
  std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
  consumers.push_back(std::move(first));
  consumers.push_back(std::move(action));
  return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
}


// Skips, on the device side, the bodies of the host functions of the C++ standard library's
// headers (libstdc++, libc++): the folders among the include paths that hold its
// configuration header. A device compilation never emits a host function, and such a body
// reaches nothing on the device, so parsing it is wasted: skipping them saves about a third of
// the first compilation of a file that includes `<iostream>`. A body is kept when the function is `__device__` or
// `__global__` (also implicitly: Clang's CUDA wrappers mark parts of the library host-device),
// `constexpr` or returns `auto` (Clang never skips those: callers need the body).
//
// A skipped template's body is also never instantiated, and an instantiation with a type of
// the program's own (a functor, a lambda, a `std::vector<T>` of the program's `T`) could reach
// the program's templates through it: a kernel template launched, a device variable template
// named, which the device side must then define; and it is where the program's mistakes with
// the library show (`std::sort` of a type without `operator<`). So every instantiation of a
// skipped body is watched (`Watch`): when its template arguments, those of the classes and
// functions around it, or its signature's types name anything but built-in types, the
// library's own types and templates, enumerations, and plain classes of other system headers
// (CUDA's `float4`, the C library's `mbstate_t`, CCCL's plain structs: `plain`), the parse
// stops and the compilation runs again with every body, its first run's messages dropped. What
// stays skipped is then only ever instantiated for the library's own world, which the standard
// keeps the program out of (a program may add to `std` only specialisations for its own
// types), so the PTX and the messages are those of the whole parse.
//
// Precompiled headers (the CUDA wrapper's, a preamble) are made with every body: they are
// made once and then serve many compilations, whatever those instantiate.
class SkipLibraryBodies : public clang::SemaConsumer {
public:
  SkipLibraryBodies(std::vector<std::string> folders, bool &needs_bodies)
      : needs_bodies(needs_bodies), folders(std::move(folders)) {}

  void Initialize(clang::ASTContext &context) override { sources = &context.getSourceManager(); }
  void InitializeSema(clang::Sema &sema) override { sema.TemplateInstCallbacks.push_back(std::make_unique<Watch>(*this)); }

  // Once the bodies are known to be needed, the parse stops: the compilation runs again.
  bool HandleTopLevelDecl(clang::DeclGroupRef) override { return !needs_bodies; }

  bool shouldSkipFunctionBody(clang::Decl *decl) override {
    const clang::FunctionDecl *function = decl->getAsFunction();
    return function && !function->hasAttr<clang::CUDADeviceAttr>() && !function->hasAttr<clang::CUDAGlobalAttr>() &&
           in_library(decl);
  }

  // Set when the compilation must run again with every body; outlives the consumer, which
  // Clang frees at the end of the action.
  bool &needs_bodies;

private:
  // Sees each instantiation begin: one of a function whose body was skipped, with anything of
  // the program's in its arguments, needs the bodies.
  class Watch : public clang::TemplateInstantiationCallback {
  public:
    explicit Watch(SkipLibraryBodies &owner) : owner(owner) {}
    void initialize(const clang::Sema &) override {}
    void finalize(const clang::Sema &) override {}
    void atTemplateEnd(const clang::Sema &, const clang::Sema::CodeSynthesisContext &) override {}
    void atTemplateBegin(const clang::Sema &, const clang::Sema::CodeSynthesisContext &context) override {
      if (owner.needs_bodies || context.Kind != clang::Sema::CodeSynthesisContext::TemplateInstantiation)
        return;
      auto *function = llvm::dyn_cast_or_null<clang::FunctionDecl>(context.Entity);
      if (!function)
        return;
      const clang::FunctionDecl *pattern = function->getTemplateInstantiationPattern();
      const clang::FunctionDecl *definition = nullptr;
      if (pattern && pattern->isDefined(definition) && definition->hasSkippedBody() && owner.foreign(function))
        owner.needs_bodies = true;
    }

  private:
    SkipLibraryBodies &owner;
  };

  // Whether the declaration lies in one of the library's folders (by the file its location
  // expands to; a declaration without a location is Clang's own).
  bool in_library(const clang::Decl *decl) {
    clang::SourceLocation at = decl->getLocation();
    if (at.isInvalid())
      return decl->isImplicit();
    clang::FileID file = sources->getFileID(sources->getExpansionLoc(at));
    auto [known, added] = library_files.try_emplace(file, false);
    if (added)
      if (clang::OptionalFileEntryRef entry = sources->getFileEntryRefForID(file)) {
        llvm::StringRef name = entry->getName();
        for (const std::string &folder : folders)
          if (name.size() > folder.size() && name.starts_with(folder) && llvm::sys::path::is_separator(name[folder.size()]))
            known->second = true;
      }
    return known->second;
  }

  // Whether an instantiated function names anything outside the library: in its own template
  // arguments, those of every class or function it is nested in, or its type.
  bool foreign(const clang::FunctionDecl *function) {
    if (foreign(function->getType()))
      return true;
    for (const clang::DeclContext *at = function; at; at = at->getParent()) {
      const clang::TemplateArgumentList *arguments = nullptr;
      if (auto *f = llvm::dyn_cast<clang::FunctionDecl>(at))
        arguments = f->getTemplateSpecializationArgs();
      else if (auto *c = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(at))
        arguments = &c->getTemplateArgs();
      else if (auto *r = llvm::dyn_cast<clang::CXXRecordDecl>(at); r && !in_library(r))
        return true;
      if (arguments && foreign(arguments->asArray()))
        return true;
    }
    return false;
  }

  bool foreign(llvm::ArrayRef<clang::TemplateArgument> arguments) {
    return llvm::any_of(arguments, [this](const clang::TemplateArgument &argument) { return foreign(argument); });
  }

  bool foreign(const clang::TemplateArgument &argument) {
    switch (argument.getKind()) {
    case clang::TemplateArgument::Null:
    case clang::TemplateArgument::NullPtr:
    case clang::TemplateArgument::Integral:
      return false;
    case clang::TemplateArgument::StructuralValue:
      return foreign(argument.getStructuralValueType());
    case clang::TemplateArgument::Type:
      return foreign(argument.getAsType());
    case clang::TemplateArgument::Declaration:
      return !in_library(argument.getAsDecl()) || foreign(argument.getParamTypeForDecl());
    case clang::TemplateArgument::Template:
    case clang::TemplateArgument::TemplateExpansion: {
      const clang::TemplateDecl *t = argument.getAsTemplateOrTemplatePattern().getAsTemplateDecl();
      return !t || !in_library(t);
    }
    case clang::TemplateArgument::Pack:
      return foreign(argument.pack_elements());
    case clang::TemplateArgument::Expression:
      return true;
    }
    return true;
  }

  // Whether a type may lead a library body outside the library (through a class, or a class
  // template's arguments: `foreign(TagDecl)`); anything it cannot read counts as outside.
  bool foreign(clang::QualType type) {
    const clang::Type *t = type.getCanonicalType().getTypePtrOrNull();
    if (!t)
      return true;
    if (t->isBuiltinType())
      return false;
    if (const clang::Type *pointee = t->getPointeeOrArrayElementType(); pointee != t)
      return foreign(clang::QualType(pointee, 0));
    if (auto *r = t->getAs<clang::ReferenceType>())
      return foreign(r->getPointeeType());
    if (auto *m = t->getAs<clang::MemberPointerType>()) {
      const clang::CXXRecordDecl *owner = m->getMostRecentCXXRecordDecl();
      return foreign(m->getPointeeType()) || !owner || foreign(owner);
    }
    if (auto *f = t->getAs<clang::FunctionProtoType>()) {
      if (foreign(f->getReturnType()))
        return true;
      for (clang::QualType parameter : f->getParamTypes())
        if (foreign(parameter))
          return true;
      return false;
    }
    if (auto *v = t->getAs<clang::VectorType>())
      return foreign(v->getElementType());
    if (auto *c = t->getAs<clang::ComplexType>())
      return foreign(c->getElementType());
    if (const clang::TagDecl *tag = t->getAsTagDecl())
      return foreign(tag);
    return true;
  }

  // Whether a class or enumeration may lead a library body outside the library: a library
  // class whose template arguments may (its own or those of a class around it), any class of
  // the program's own files, or a class of another system header (CUDA's, CCCL's, the C
  // library's) that is not plain. An enumeration leads nowhere. The program's classes count
  // even when plain: a library body instantiated for them is where the program's mistakes
  // show (`std::sort` of a type without `operator<`), which nvcc reports.
  bool foreign(const clang::TagDecl *tag) {
    if (llvm::isa<clang::EnumDecl>(tag))
      return false;
    if (in_library(tag)) {
      for (const clang::DeclContext *at = tag; at; at = at->getParent())
        if (auto *c = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(at); c && foreign(c->getTemplateArgs().asArray()))
          return true;
      return false;
    }
    auto *record = llvm::dyn_cast<clang::CXXRecordDecl>(tag);
    return !record || !sources->isInSystemHeader(record->getLocation()) || !plain(record);
  }

  // A class through which a library body instantiates nothing: neither a template's
  // specialisation nor inside one, not a generic lambda, with no member or friend template, and
  // with bases and fields of types that lead nowhere either (the special members a library body
  // may define for it then instantiate nothing). Its other member functions were compiled where
  // they were written, with what they instantiate. (A library body could still find a function
  // template of the class's namespace by argument-dependent lookup: the library's unqualified
  // calls are its customisation points, `swap` and the operators, and no system header
  // launches a kernel from an unconstrained operator template.)
  bool plain(const clang::CXXRecordDecl *record) {
    if (auto known = plain_records.find(record); known != plain_records.end())
      return known->second;
    plain_records[record] = true; // while it is looked at: a class that points to itself
    bool result = plain_now(record);
    plain_records[record] = result;
    return result;
  }

  bool plain_now(const clang::CXXRecordDecl *record) {
    if (llvm::isa<clang::ClassTemplateSpecializationDecl>(record) || record->isDependentContext() ||
        (record->isLambda() && record->isGenericLambda()))
      return false;
    for (const clang::DeclContext *at = record->getParent(); at; at = at->getParent()) {
      if (llvm::isa<clang::ClassTemplateSpecializationDecl>(at))
        return false;
      if (auto *f = llvm::dyn_cast<clang::FunctionDecl>(at); f && f->getTemplateSpecializationArgs())
        return false;
    }
    const clang::CXXRecordDecl *definition = record->getDefinition();
    if (!definition)
      return true;
    for (const clang::Decl *member : definition->decls()) {
      if (llvm::isa<clang::FunctionTemplateDecl, clang::ClassTemplateDecl, clang::VarTemplateDecl>(member))
        return false;
      if (auto *f = llvm::dyn_cast<clang::FriendDecl>(member))
        if (const clang::NamedDecl *named = f->getFriendDecl(); named && llvm::isa<clang::TemplateDecl>(named))
          return false;
    }
    for (const clang::CXXBaseSpecifier &base : definition->bases())
      if (foreign(base.getType()))
        return false;
    for (const clang::FieldDecl *field : definition->fields())
      if (foreign(field->getType()))
        return false;
    return true;
  }

  std::vector<std::string> folders;
  const clang::SourceManager *sources = nullptr;
  llvm::DenseMap<clang::FileID, bool> library_files;
  llvm::DenseMap<const clang::CXXRecordDecl *, bool> plain_records;
};

// The include folders of the C++ standard library: those holding libstdc++'s configuration
// header (its target folder), its algorithms (its main folder) or its `backward/` warning, or
// libc++'s `__config`.
std::vector<std::string> library_folders(const clang::HeaderSearchOptions &options) {
  std::vector<std::string> out;
  for (const clang::HeaderSearchOptions::Entry &entry : options.UserEntries)
    for (const char *marker : {"bits/c++config.h", "bits/stl_algobase.h", "backward_warning.h", "__config"}) {
      llvm::SmallString<256> path(entry.Path);
      llvm::sys::path::append(path, marker);
      if (llvm::sys::fs::exists(path)) {
        out.push_back(entry.Path);
        break;
      }
    }
  return out;
}

// nvcc's rules of device code that Clang's CUDA lacks, checked on the device side in the
// program's own files (never a system header's: Clang's CUDA headers and the C++ library rely on
// Clang's rules), as each declaration is parsed, both where a file is compiled and where its
// preamble is precompiled (an error there makes the compilation parse the preamble itself, and
// report it). Each message once per place (a template's instantiations share their places).
//
// - A device function's assignment to a `__constant__` variable itself (`c = 1`, `c += 1`,
//   `++c`): nvcc refuses it ("expression must be a modifiable lvalue", measured with nvcc 13.5);
//   Clang accepts it, and its optimiser removes the store (a store to a `constant` global), so
//   the program would silently not write. nvcc compiles a write to an element of a `__constant__`
//   array or a member of a `__constant__` struct, and a write through a pointer such a variable
//   holds (measured), and so does cdpc.
// - A call of a `constexpr` function that is not `__device__` (Clang makes every such function
//   implicitly `__host__ __device__`, `-fcuda-host-device-constexpr`) from a `__device__` or
//   `__global__` function: nvcc's error without `--expt-relaxed-constexpr` (its warning from a
//   `__host__ __device__` function), in constant expressions and constructors too; not for
//   implicit and defaulted members, destructors, lambdas, `std::move`, `std::forward` and
//   `std::initializer_list`'s members, which nvcc allows (all measured, docs/NVCC-DIALECT.md).
//   `std::min` and `std::max` are Clang's explicit `__host__ __device__` overloads
//   (cuda_wrappers/algorithm) and nvcc's host ones: refused as nvcc refuses them. Clang's own
//   `-fno-cuda-host-device-constexpr` is not used: Clang's CUDA headers need the relaxed rule.
//   The option defines `__CUDACC_RELAXED_CONSTEXPR__`, as nvcc's does, and that turns the check
//   off.
// - A lambda annotated `__device__` or `__host__` (an extended lambda): nvcc's error without
//   `--extended-lambda`, wherever the lambda is; the option defines `__CUDACC_EXTENDED_LAMBDA__`
//   (given Clang as `__CDPC_EXTENDED_LAMBDA__`, which cdpc's additions define it as: the driver's
//   `cuda::macro_for_clang`).
class NvccRules : public clang::ASTConsumer, public clang::RecursiveASTVisitor<NvccRules> {
public:
  explicit NvccRules(const clang::PreprocessorOptions &options)
      : relaxed_constexpr(macro_defined(options, "__CUDACC_RELAXED_CONSTEXPR__")),
        extended_lambda(macro_defined(options, "__CUDACC_EXTENDED_LAMBDA__") || macro_defined(options, "__CDPC_EXTENDED_LAMBDA__")) {}

  void Initialize(clang::ASTContext &context) override {
    device = context.getLangOpts().CUDAIsDevice;
    sources = &context.getSourceManager();
    diags = &context.getDiagnostics();
  }

  // Each declaration as it is parsed (a template's instantiations too, as Sema makes them):
  // never those a precompiled header holds (walking the translation unit would read them all
  // back), never a system header's.
  bool HandleTopLevelDecl(clang::DeclGroupRef group) override {
    if (device)
      for (clang::Decl *decl : group)
        TraverseDecl(decl);
    return true;
  }

  bool TraverseDecl(clang::Decl *decl) {
    if (!decl || (decl->getLocation().isValid() && sources->isInSystemHeader(decl->getLocation())))
      return true;
    return clang::RecursiveASTVisitor<NvccRules>::TraverseDecl(decl);
  }

  bool VisitLambdaExpr(clang::LambdaExpr *lambda) {
    if (extended_lambda)
      return true;
    const clang::CXXMethodDecl *call = lambda->getCallOperator();
    if (!call || !call->hasAttrs())
      return true;
    for (const clang::Attr *attr : call->attrs()) {
      if (attr->isImplicit() || !llvm::isa<clang::CUDADeviceAttr, clang::CUDAHostAttr>(attr))
        continue;
      report(clang::DiagnosticsEngine::Error, attr->getLocation(),
             std::string("a lambda annotated ") + (llvm::isa<clang::CUDADeviceAttr>(attr) ? "__device__" : "__host__") +
                 " needs --extended-lambda, as nvcc's does (nvcc refuses it without the option)");
      break;
    }
    return true;
  }

  bool VisitFunctionDecl(clang::FunctionDecl *function) {
    if (!function->doesThisDeclarationHaveABody())
      return true;
    // Writes: in every device function. Calls: only where the program said `__device__` or
    // `__global__` itself (an implicitly host-device `constexpr` function's body is host code
    // to nvcc), in a function nvcc does not exempt, and once per instantiation (a template's
    // own body names what its instantiations name). One walk of the body for both.
    bool writes = function->hasAttr<clang::CUDADeviceAttr>() || function->hasAttr<clang::CUDAGlobalAttr>();
    bool calls = !relaxed_constexpr && !function->isDependentContext() && !exempt(function) &&
                 (explicitly<clang::CUDAGlobalAttr>(function) || explicitly<clang::CUDADeviceAttr>(function));
    if (!writes && !calls)
      return true;
    if (auto *constructor = llvm::dyn_cast<clang::CXXConstructorDecl>(function); constructor && calls)
      for (const clang::CXXCtorInitializer *init : constructor->inits())
        if (init->isWritten())
          Body(*this, function, false, true).TraverseStmt(init->getInit());
    Body(*this, function, writes, calls).TraverseStmt(function->getBody());
    return true;
  }

private:
  struct Body : public clang::RecursiveASTVisitor<Body> {
    Body(NvccRules &outer, const clang::FunctionDecl *function, bool writes, bool calls)
        : outer(outer), function(function), writes(writes), calls(calls) {}
    NvccRules &outer;
    const clang::FunctionDecl *function;
    bool writes;
    bool calls;
    bool VisitBinaryOperator(clang::BinaryOperator *op) {
      if (writes && op->isAssignmentOp())
        outer.check_write(op->getLHS(), op->getOperatorLoc());
      return true;
    }
    bool VisitUnaryOperator(clang::UnaryOperator *op) {
      if (writes && op->isIncrementDecrementOp())
        outer.check_write(op->getSubExpr(), op->getOperatorLoc());
      return true;
    }
    bool VisitCallExpr(clang::CallExpr *call) {
      if (calls)
        outer.check_call(call->getDirectCallee(), call->getExprLoc(), call->getSourceRange(), function);
      return true;
    }
    bool VisitCXXConstructExpr(clang::CXXConstructExpr *construct) {
      if (calls)
        outer.check_call(construct->getConstructor(), construct->getLocation(), construct->getSourceRange(), function);
      return true;
    }
  };

  template <class A> static bool explicitly(const clang::Decl *decl) {
    const A *attr = decl->getAttr<A>();
    return attr && !attr->isImplicit();
  }

  // What nvcc calls from device code without `--expt-relaxed-constexpr` (measured): implicit and
  // defaulted members, destructors, lambdas, `std::move`, `std::forward` and the members of
  // `std::initializer_list`.
  static bool exempt(const clang::FunctionDecl *function) {
    if (function->isImplicit() || function->isDefaulted() || llvm::isa<clang::CXXDestructorDecl>(function))
      return true;
    if (auto *method = llvm::dyn_cast<clang::CXXMethodDecl>(function)) {
      if (method->getParent()->isLambda())
        return true;
      if (const clang::IdentifierInfo *name = method->getParent()->getIdentifier())
        if (name->isStr("initializer_list") && method->getParent()->isInStdNamespace())
          return true;
    }
    if (function->isInStdNamespace() && function->getIdentifier() &&
        (function->getName() == "move" || function->getName() == "forward"))
      return true;
    return false;
  }

  // Whether `callee` is, to nvcc, a `constexpr` host function: Clang made it host-device (no
  // `__device__` of the program's own), or it is Clang's `std::min`/`std::max` for the device.
  bool host_constexpr(const clang::FunctionDecl *callee) const {
    if (!callee->isConstexpr() || exempt(callee) || !callee->hasAttr<clang::CUDADeviceAttr>() || callee->hasAttr<clang::CUDAGlobalAttr>())
      return false;
    const clang::FunctionDecl *pattern = callee->getTemplateInstantiationPattern();
    if (!explicitly<clang::CUDADeviceAttr>(callee) && !(pattern && explicitly<clang::CUDADeviceAttr>(pattern)))
      return true;
    if (!callee->isInStdNamespace())
      return false;
    llvm::StringRef file = sources->getFilename(sources->getSpellingLoc((pattern ? pattern : callee)->getLocation()));
    return file.ends_with("cuda_wrappers/algorithm");
  }

  void check_write(const clang::Expr *target, clang::SourceLocation at) {
    const clang::Expr *e = target->IgnoreParenImpCasts();
    auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e);
    auto *var = ref ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
    if (!var || !var->hasAttr<clang::CUDAConstantAttr>())
      return;
    report(clang::DiagnosticsEngine::Error, at,
           "cannot write the __constant__ variable '" + var->getName().str() + "' in device code (nvcc: \"expression must be a modifiable lvalue\")",
           target->getSourceRange());
  }

  void check_call(const clang::FunctionDecl *callee, clang::SourceLocation at, clang::SourceRange range, const clang::FunctionDecl *caller) {
    if (!callee || !host_constexpr(callee))
      return;
    bool host_device = explicitly<clang::CUDAHostAttr>(caller);
    std::string what = "calling the constexpr host function '" + callee->getNameAsString() + "' from the " +
                       (host_device ? "__host__ __device__" : caller->hasAttr<clang::CUDAGlobalAttr>() ? "__global__" : "__device__") +
                       " function '" + caller->getNameAsString() + "' (nvcc " + (host_device ? "warns" : "refuses it") +
                       " without --expt-relaxed-constexpr: give that option, or " +
                       (callee->isInStdNamespace() ? std::string("call a __device__ function instead")
                                                   : "declare '" + callee->getNameAsString() + "' __host__ __device__") +
                       ")";
    report(host_device ? clang::DiagnosticsEngine::Warning : clang::DiagnosticsEngine::Error, at, what, range);
  }

  void report(clang::DiagnosticsEngine::Level level, clang::SourceLocation at, const std::string &text,
              clang::SourceRange range = {}) {
    if (!reported.insert(at.getRawEncoding()).second)
      return;
    unsigned id = diags->getCustomDiagID(level, "%0");
    diags->Report(at, id) << text << range;
  }

  bool relaxed_constexpr;
  bool extended_lambda;
  bool device = false;
  const clang::SourceManager *sources = nullptr;
  clang::DiagnosticsEngine *diags = nullptr;
  llvm::DenseSet<clang::SourceLocation::UIntTy> reported;
};

// nvcc 13's `--device-entity-has-hidden-visibility` (on unless the program says `false`): on
// the host side, a file's kernels and its `__device__`, `__constant__` and `__managed__`
// variables get hidden ELF visibility, so that a shared library does not export them and two
// libraries' kernels of one name do not interpose (NVIDIA's reason: a launch from one library
// that runs the other's kernel). Not where the entity has internal linkage or a visibility the
// program gave it, on the declaration or on an enclosing namespace or class (`protected`, or
// `default` to export it): those keep theirs. Measured with `readelf -s` against nvcc 13.5's
// `-dc` objects (compiler/tests/host_visibility.rs): template kernels' instances are hidden
// whatever their arguments' visibility, a redeclaration that says `default` keeps `default`.
//
// Done on definitions as they are parsed, before code generation sees them (the consumer runs
// first): an implicit `visibility("hidden")`, which a function template's instances take from
// their pattern. A declaration without a definition (`extern __device__ int v;`) keeps the
// default visibility; nvcc hides its undefined symbol too, so cdpc's object links wherever
// nvcc's does (and no earlier declaration can conflict with a later one's own visibility). The option's
// `false` arrives as the macro `__CDPC_DEVICE_ENTITY_DEFAULT_VISIBILITY__` (nvcc_options.rs).
class HiddenDeviceEntities : public clang::ASTConsumer {
public:
  explicit HiddenDeviceEntities(const clang::PreprocessorOptions &options)
      : off(macro_defined(options, "__CDPC_DEVICE_ENTITY_DEFAULT_VISIBILITY__")) {}

  void Initialize(clang::ASTContext &c) override {
    context = &c;
    active = !off && c.getLangOpts().CUDA && !c.getLangOpts().CUDAIsDevice;
  }

  bool HandleTopLevelDecl(clang::DeclGroupRef group) override {
    if (active)
      for (clang::Decl *decl : group)
        visit(decl);
    return true;
  }

private:
  void visit(clang::Decl *decl) {
    if (llvm::isa<clang::NamespaceDecl, clang::LinkageSpecDecl>(decl)) {
      for (clang::Decl *member : llvm::cast<clang::DeclContext>(decl)->decls())
        visit(member);
      return;
    }
    if (auto *pattern = llvm::dyn_cast<clang::FunctionTemplateDecl>(decl))
      decl = pattern->getTemplatedDecl();
    else if (auto *pattern = llvm::dyn_cast<clang::VarTemplateDecl>(decl))
      decl = pattern->getTemplatedDecl();
    if (auto *function = llvm::dyn_cast<clang::FunctionDecl>(decl)) {
      if (function->hasAttr<clang::CUDAGlobalAttr>() && function->doesThisDeclarationHaveABody())
        hide(function);
    } else if (auto *var = llvm::dyn_cast<clang::VarDecl>(decl)) {
      if ((var->hasAttr<clang::CUDADeviceAttr>() || var->hasAttr<clang::CUDAConstantAttr>()) && var->hasGlobalStorage() &&
          !var->isStaticLocal() && var->isThisDeclarationADefinition() != clang::VarDecl::DeclarationOnly)
        hide(var);
    }
  }

  void hide(clang::NamedDecl *decl) {
    if (decl->hasAttr<clang::VisibilityAttr>())
      return;
    clang::LinkageInfo lv = decl->getLinkageAndVisibility();
    if (!clang::isExternallyVisible(lv.getLinkage()) || lv.isVisibilityExplicit())
      return;
    decl->addAttr(clang::VisibilityAttr::CreateImplicit(*context, clang::VisibilityAttr::Hidden));
  }

  bool off;
  bool active = false;
  clang::ASTContext *context = nullptr;
};

// Ahead of code generation: while every error of a device-side run is a call from host code
// to device code (Forward's `forgive_host_calls`), the engine's error state is cleared before
// each declaration reaches code generation, which otherwise stops emitting anything after the
// first error (a kernel defined after such a host variable would be missing from the module),
// and at the end of the file the messages are forgotten, so that the module is written as
// nvcc's device pass writes it. Clang's recovery left those host functions and variables
// marked invalid; the device side never emits a host one.
class ForgiveHostCalls : public clang::ASTConsumer {
public:
  ForgiveHostCalls(Forward &forward, clang::DiagnosticsEngine &diags) : forward(forward), diags(diags) {}
  bool HandleTopLevelDecl(clang::DeclGroupRef) override {
    clear_if_forgiven();
    return true;
  }
  void HandleInlineFunctionDefinition(clang::FunctionDecl *) override { clear_if_forgiven(); }
  void HandleTagDeclDefinition(clang::TagDecl *) override { clear_if_forgiven(); }
  void HandleCXXStaticMemberVarInstantiation(clang::VarDecl *) override { clear_if_forgiven(); }
  void HandleTranslationUnit(clang::ASTContext &) override {
    if (clear_if_forgiven())
      forward.forgive();
  }

private:
  // Whether the errors so far (one at least) are all forgiven calls; then the engine's error
  // state is cleared (the messages stay held until the end).
  bool clear_if_forgiven() {
    if (!forward.only_host_calls() || diags.hasFatalErrorOccurred())
      return false;
    if (diags.hasErrorOccurred())
      diags.Reset(/*soft=*/true);
    return true;
  }

  Forward &forward;
  clang::DiagnosticsEngine &diags;
};

// Lends Forward the run's Sema (Forward's `in_device_code`).
class SemaForForward : public clang::SemaConsumer {
public:
  explicit SemaForForward(Forward &forward) : forward(forward) {}
  void InitializeSema(clang::Sema &sema) override { forward.sema = &sema; }
  void ForgetSema() override { forward.sema = nullptr; }

private:
  Forward &forward;
};

// The host side's warnings in device code, dropped at the end of the file: nvcc's host
// compiler never sees the definition of a `__global__` or `__device__` (not also `__host__`)
// function (cudafe++ leaves it a kernel's stub alone), so the host options' warnings
// (`-Xcompiler -Wall -Wextra`) are of host and `__host__ __device__` code only, and the device
// side gives device code's own. A warning is in device code where its place (the macro's use,
// for one inside a macro) lies within such a function's definition, parameters included, or a
// device lambda's; a template's instantiations warn at the template's place. The definitions
// are looked for only where the run holds a warning, and only among the declarations this run
// parsed (a precompiled header's are never read for it: their warnings are not this run's).
class HostWarningsInDeviceCode : public clang::ASTConsumer, public clang::RecursiveASTVisitor<HostWarningsInDeviceCode> {
public:
  explicit HostWarningsInDeviceCode(Forward &forward) : forward(forward) {}

  bool HandleTopLevelDecl(clang::DeclGroupRef group) override {
    parsed.insert(parsed.end(), group.begin(), group.end());
    return true;
  }

  void HandleTranslationUnit(clang::ASTContext &c) override {
    if (!forward.holds_warnings())
      return;
    sources = &c.getSourceManager();
    // By index: a declaration read from a precompiled header while one is walked (a body
    // deserialized on first sight) reaches `HandleTopLevelDecl` as an interesting one and is
    // appended, which may move the vector (a range-for over it crashed once the header no longer
    // had its unused declarations read at the end of the file, 2026-12-03).
    for (size_t i = 0; i < parsed.size(); ++i)
      TraverseDecl(parsed[i]);
    forward.drop_warnings([&](clang::SourceLocation at) {
      auto [file, offset] = sources->getDecomposedLoc(sources->getExpansionLoc(at));
      return std::any_of(definitions.begin(), definitions.end(),
                         [&](const Definition &d) { return d.file == file && d.begin <= offset && offset <= d.end; });
    });
  }

  bool shouldVisitTemplateInstantiations() const { return false; }

  bool VisitFunctionDecl(clang::FunctionDecl *function) {
    if (function->doesThisDeclarationHaveABody() && device_only(function))
      add(function->getSourceRange());
    return true;
  }

  bool VisitLambdaExpr(clang::LambdaExpr *lambda) {
    if (clang::CXXMethodDecl *call = lambda->getCallOperator(); call && device_only(call))
      add(lambda->getSourceRange());
    return true;
  }

private:
  struct Definition {
    clang::FileID file;
    unsigned begin, end;
  };

  static bool device_only(const clang::FunctionDecl *function) {
    return function->hasAttr<clang::CUDAGlobalAttr>() ||
           (function->hasAttr<clang::CUDADeviceAttr>() && !function->hasAttr<clang::CUDAHostAttr>());
  }

  void add(clang::SourceRange range) {
    auto [file, begin] = sources->getDecomposedLoc(sources->getExpansionLoc(range.getBegin()));
    auto [end_file, end] = sources->getDecomposedLoc(sources->getExpansionLoc(range.getEnd()));
    if (file.isValid() && file == end_file && begin <= end)
      definitions.push_back({file, begin, end});
  }

  Forward &forward;
  std::vector<clang::Decl *> parsed;
  const clang::SourceManager *sources = nullptr;
  std::vector<Definition> definitions;
};

// `#pragma unroll` without a count over tensor-core operations, unrolled as far as nvcc
// unrolls it (docs/CUDA-CXX.md, "`#pragma unroll` without a count"). LLVM unrolls a loop of
// known trip count completely where its cost model says the result stays small, and counts a
// tensor-core load or product (`wmma::load_matrix_sync`, `wmma::mma_sync`) as about one
// instruction, whatever its fragments hold: it unrolled cuda-samples' bf16TensorCoreGemm's
// 64-trip loop of 144 such operations completely (4,096 products), where nvcc unrolls it by 8,
// and took minutes to compile it. A loop Clang marks `llvm.loop.unroll.enable` whose body holds
// such an operation is weighed here as nvcc weighs it, before LLVM's unrollers read it (inner
// loops are unrolled first, so an outer loop's body is weighed as it will be copied): each value
// a tensor-core operation's fragment yields (an `extractvalue`) 1, the operation itself 2, and
// every other instruction that stays one in PTX 1; what becomes registers or addressing weighs
// nothing (`phi`, `insertvalue`, casts, `getelementptr`, branches, the loads and stores of a
// local array that SROA takes apart once the loop is unrolled). A loop of at most 128 trips
// weighing at most 55,000 in all is left to LLVM, which unrolls it completely; any other gets
// `llvm.loop.unroll.count`: the largest divisor of its trip count whose copies weigh at most
// 19,000. Fitted to nvcc 13.5's counts of the loops of compiler/tests/unroll_ptx.rs (64 trips of
// 17 operations unrolled completely, 256 by 128) and of cuda-samples' five tensor-core GEMMs
// (bf16 and tf32 by 8, dmma by 16, half and int8 completely).
class TensorCoreUnrollCounts : public llvm::PassInfoMixin<TensorCoreUnrollCounts> {
public:
  static constexpr uint64_t full_trips = 128, full_budget = 55000, budget = 19000, tensor_cost = 2;

  llvm::PreservedAnalyses run(llvm::Loop &loop, llvm::LoopAnalysisManager &, llvm::LoopStandardAnalysisResults &results,
                              llvm::LPMUpdater &) {
    if (!llvm::getBooleanLoopAttribute(&loop, "llvm.loop.unroll.enable") || llvm::findOptionMDForLoop(&loop, "llvm.loop.unroll.count") ||
        llvm::getBooleanLoopAttribute(&loop, "llvm.loop.unroll.full") || llvm::getBooleanLoopAttribute(&loop, "llvm.loop.unroll.disable"))
      return llvm::PreservedAnalyses::all();
    uint64_t trips = results.SE.getSmallConstantTripCount(&loop);
    if (trips < 2)
      return llvm::PreservedAnalyses::all();
    uint64_t weight = 0;
    bool tensor = false;
    for (llvm::BasicBlock *block : loop.blocks()) {
      for (llvm::Instruction &instruction : *block)
        weight += weight_of(instruction, tensor);
    }
    if (!tensor || weight == 0 || (trips <= full_trips && trips * weight <= full_budget))
      return llvm::PreservedAnalyses::all();
    // At most budget / weight copies fit: the search is short whatever the trip count.
    uint64_t count = 1;
    for (uint64_t divisor = std::min(trips / 2, budget / weight); divisor >= 2; --divisor) {
      if (trips % divisor == 0) {
        count = divisor;
        break;
      }
    }
    llvm::addStringMetadataToLoop(&loop, "llvm.loop.unroll.count", static_cast<unsigned>(count));
    return llvm::PreservedAnalyses::all();
  }

private:
  // Whether `pointer` is into a local array (an `alloca`), which becomes registers.
  static bool local(const llvm::Value *pointer) { return llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(pointer)); }

  static uint64_t weight_of(const llvm::Instruction &instruction, bool &tensor) {
    if (llvm::isa<llvm::PHINode, llvm::InsertValueInst, llvm::CastInst, llvm::GetElementPtrInst, llvm::BranchInst>(instruction))
      return 0;
    if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&instruction))
      return local(load->getPointerOperand()) ? 0 : 1;
    if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&instruction))
      return local(store->getPointerOperand()) ? 0 : 1;
    if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction)) {
      if (call->isAssumeLikeIntrinsic() || call->isLifetimeStartOrEnd() || llvm::isa<llvm::DbgInfoIntrinsic>(call))
        return 0;
      if (auto *copy = llvm::dyn_cast<llvm::MemTransferInst>(call))
        return local(copy->getRawDest()) && local(copy->getRawSource()) ? 0 : 1;
      llvm::StringRef name = call->getCalledFunction() ? call->getCalledFunction()->getName() : "";
      if (name.starts_with("llvm.nvvm.wmma.") || name.starts_with("llvm.nvvm.mma.") || name.starts_with("llvm.nvvm.ldmatrix.")) {
        tensor = true;
        return tensor_cost;
      }
    }
    return 1;
  }
};

// Clang's `-emit-pch`, with the list of deferred diagnostics' roots (above) pruned before the
// header is written, nvcc's rules checked and, on the host side, its visibility given (above):
// a header's entities keep what they were given there. On the host side its warnings in device
// code are dropped as a compilation's are (HostWarningsInDeviceCode): a preamble's messages are
// replayed by every compilation that reads it, which says what one without it says.
class GeneratePrunedPCHAction : public clang::GeneratePCHAction {
public:
  Forward *forward = nullptr;

protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance &instance, llvm::StringRef file) override {
    auto action = in_front(std::make_unique<PruneDeferredDiagnosticRoots>(), clang::GeneratePCHAction::CreateASTConsumer(instance, file));
    if (forward && forward->forgive_host_calls && !forward->device_side) {
      action = in_front(std::make_unique<HostWarningsInDeviceCode>(*forward), std::move(action));
      action = in_front(std::make_unique<SemaForForward>(*forward), std::move(action));
    }
    action = in_front(std::make_unique<HiddenDeviceEntities>(instance.getPreprocessorOpts()), std::move(action));
    return in_front(std::make_unique<NvccRules>(instance.getPreprocessorOpts()), std::move(action));
  }
};

// Clang's `-emit-llvm -c`, either side: on the device side skipping the library's bodies
// (above) where `skip` and forgiving calls from host code (above) where `forward` asks, on the
// host side giving nvcc's visibility (above), and checking nvcc's rules (above).
class EmitBitcode : public clang::EmitBCAction {
public:
  bool needs_bodies = false;
  bool skip = true;
  Forward *forward = nullptr;

protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance &instance, llvm::StringRef file) override {
    auto action = in_front(std::make_unique<HiddenDeviceEntities>(instance.getPreprocessorOpts()),
                           clang::EmitBCAction::CreateASTConsumer(instance, file));
    if (forward && forward->forgive_host_calls) {
      if (!forward->device_side)
        action = in_front(std::make_unique<HostWarningsInDeviceCode>(*forward), std::move(action));
      action = in_front(std::make_unique<ForgiveHostCalls>(*forward, instance.getDiagnostics()), std::move(action));
      action = in_front(std::make_unique<SemaForForward>(*forward), std::move(action));
    }
    if (skip)
      action = in_front(std::make_unique<SkipLibraryBodies>(library_folders(instance.getHeaderSearchOpts()), needs_bodies), std::move(action));
    return in_front(std::make_unique<NvccRules>(instance.getPreprocessorOpts()), std::move(action));
  }
};

// What every file Clang reads goes through: what nvcc reads and Clang does not, made Clang's
// (compiler/src/front/cuda/nvcc_text.rs). A file that needs no change is Clang's own buffer,
// untouched, and so is every binary file (a precompiled header, bitcode: the filter refuses a
// text with a NUL byte); one that does is a new buffer, never shorter than the file, with its line breaks
// where they were (Clang refuses a buffer shorter than the file's size, not a longer one), so
// line numbers and a precompiled header's checks of its inputs stay the file's.
struct SourceFilter {
  cdpc_source_test_fn test = nullptr;
  cdpc_source_rewrite_fn rewrite = nullptr;
};

class FilteredFile : public llvm::vfs::File {
public:
  FilteredFile(std::unique_ptr<llvm::vfs::File> inner, SourceFilter filter) : inner(std::move(inner)), filter(filter) {}
  llvm::ErrorOr<llvm::vfs::Status> status() override { return inner->status(); }
  llvm::ErrorOr<std::string> getName() override { return inner->getName(); }
  std::error_code close() override { return inner->close(); }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> getBuffer(const llvm::Twine &name, int64_t size,
                                                               bool null_terminated, bool is_volatile) override {
    auto buffer = inner->getBuffer(name, size, null_terminated, is_volatile);
    if (!buffer)
      return buffer;
    llvm::StringRef text = (*buffer)->getBuffer();
    if (text.empty() || !filter.test(text.data(), text.size()))
      return buffer;
    struct Taken {
      std::unique_ptr<llvm::WritableMemoryBuffer> copy;
      std::string name;
    } taken{nullptr, (*buffer)->getBufferIdentifier().str()};
    auto take = [](void *user, const char *new_text, size_t len) {
      auto *t = static_cast<Taken *>(user);
      t->copy = llvm::WritableMemoryBuffer::getNewUninitMemBuffer(len, t->name);
      if (t->copy)
        std::memcpy(t->copy->getBufferStart(), new_text, len);
    };
    if (!filter.rewrite(text.data(), text.size(), take, &taken) || !taken.copy)
      return buffer;
    return std::unique_ptr<llvm::MemoryBuffer>(std::move(taken.copy));
  }

private:
  std::unique_ptr<llvm::vfs::File> inner;
  SourceFilter filter;
};

class FilteredFileSystem : public llvm::vfs::ProxyFileSystem {
public:
  FilteredFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> inner, SourceFilter filter)
      : ProxyFileSystem(std::move(inner)), filter(filter) {}
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine &path) override {
    auto file = ProxyFileSystem::openFileForRead(path);
    if (!file)
      return file;
    return std::unique_ptr<llvm::vfs::File>(std::make_unique<FilteredFile>(std::move(*file), filter));
  }

private:
  SourceFilter filter;
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
  // instead of ending the process, and so does an LLVM fatal error (`report_fatal_error`),
  // its reason kept (compiler/src/back/llvm_shim.cpp). The handlers stay installed; a signal
  // outside a recovery context restores the previous handlers and is raised again.
  cdpc_enable_recovery();
}

// Runs one front-end action for `invocation`; with `skip_library_bodies` (the device side's
// bitcode), the standard library's host bodies are skipped (SkipLibraryBodies) and
// `needs_bodies` says whether the run must be repeated with them.
bool execute(std::shared_ptr<clang::CompilerInvocation> invocation, Forward &forward, SourceFilter filter,
             bool skip_library_bodies, bool &needs_bodies, bool no_error_limit = false) {
  clang::CompilerInstance instance(std::move(invocation));
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> files = llvm::vfs::getRealFileSystem();
  if (filter.test && filter.rewrite)
    files = llvm::makeIntrusiveRefCnt<FilteredFileSystem>(std::move(files), filter);
  instance.createVirtualFileSystem(std::move(files), &forward);
  instance.createDiagnostics(&forward, false);
  if (!instance.hasDiagnostics())
    return false;
  if (no_error_limit)
    instance.getDiagnostics().setErrorLimit(0);
  forward.system_header_warnings = !instance.getDiagnostics().getSuppressSystemWarnings();
  // The actions cdpc's arguments ask for (`-emit-llvm -c`, `-Xclang -emit-pch`); `clang -cc1`'s
  // other actions (the static analyser, rewriters, ...) are not linked.
  std::unique_ptr<clang::FrontendAction> action;
  EmitBitcode *device = nullptr;
  switch (instance.getFrontendOpts().ProgramAction) {
  case clang::frontend::EmitBC:
    {
      auto emit = std::make_unique<EmitBitcode>();
      emit->skip = skip_library_bodies;
      emit->forward = &forward;
      device = emit.get();
      if (skip_library_bodies)
        instance.getFrontendOpts().SkipFunctionBodies = true;
      action = std::move(emit);
    }
    break;
  case clang::frontend::EmitLLVM:
    action = std::make_unique<clang::EmitLLVMAction>();
    break;
  case clang::frontend::GeneratePCH:
    {
      auto pch = std::make_unique<GeneratePrunedPCHAction>();
      pch->forward = &forward;
      action = std::move(pch);
    }
    break;
  case clang::frontend::PrintPreprocessedInput:
    // `-E`: cdpc's preprocess-only mode (ccache's preprocessor mode hashes its output).
    action = std::make_unique<clang::PrintPreprocessedAction>();
    break;
  default:
    forward.unsupported("a Clang action other than writing LLVM IR, a precompiled header or preprocessed source");
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
  bool done = instance.ExecuteAction(*action);
  needs_bodies = device && device->needs_bodies;
  return done;
}

// One `clang -cc1` job, as the clang program's cc1_main runs it, minus its process-wide setup
// (targets, `-mllvm` options, plugins). `CDPC_CLANG_SKIP_BODIES=0` turns SkipLibraryBodies off.
bool run_cc1(const llvm::opt::ArgStringList &cc1_args, const char *argv0, Forward &forward, SourceFilter filter) {
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
  const char *off = std::getenv("CDPC_CLANG_SKIP_BODIES");
  bool needs_bodies = false;
  forward.device_side = invocation->getLangOpts().CUDAIsDevice;
  clang::frontend::ActionKind kind = invocation->getFrontendOpts().ProgramAction;
  if (kind != clang::frontend::EmitBC && kind != clang::frontend::GeneratePCH)
    return execute(std::move(invocation), forward, filter, false, needs_bodies);
  if (!forward.device_side) {
    // The host side, compiled or precompiled (a header's messages are replayed as the
    // compilation's): narrowings in device code are nvcc's warnings, and warnings in device
    // code dropped (Forward, HostWarningsInDeviceCode).
    forward.forgive_host_calls = true;
    forward.hold();
    bool done = execute(std::move(invocation), forward, filter, false, needs_bodies);
    forward.forgive_host_calls = false;
    forward.release();
    return done;
  }
  if (kind != clang::frontend::EmitBC)
    return execute(std::move(invocation), forward, filter, false, needs_bodies);
  invocation->getCodeGenOpts().PassBuilderCallbacks.push_back([](llvm::PassBuilder &builder) {
    builder.registerLateLoopOptimizationsEPCallback(
        [](llvm::LoopPassManager &loops, llvm::OptimizationLevel) { loops.addPass(TensorCoreUnrollCounts()); });
  });
  bool skip = !(off && llvm::StringRef(off) == "0");
  // The messages wait until it is known whether this run counts, and which of its errors
  // nvcc's device pass would not give (Forward's `forgive_host_calls`).
  forward.forgive_host_calls = true;
  forward.hold();
  bool done = execute(std::make_shared<clang::CompilerInvocation>(*invocation), forward, filter, skip, needs_bodies);
  if (needs_bodies && !forward.unsupported_job) {
    forward.discard();
    forward.hold();
    skip = false;
    done = execute(std::make_shared<clang::CompilerInvocation>(*invocation), forward, filter, false, needs_bodies);
  }
  // Stopped by Clang's limit of errors with nothing but calls from host code before it: once
  // more without the limit, which sees whether they are all there is.
  if (!forward.unsupported_job && forward.stopped_at_limit_by_host_calls()) {
    forward.discard();
    forward.hold();
    done = execute(std::move(invocation), forward, filter, skip, needs_bodies, /*no_error_limit=*/true);
  }
  forward.forgive_host_calls = false;
  forward.release();
  return done;
}

} // namespace

extern "C" int cdpc_clang_run(const char *const *args, size_t nargs, cdpc_clang_diag_fn on_diag, void *user,
                              cdpc_source_test_fn source_test, cdpc_source_rewrite_fn source_rewrite) {
  std::call_once(initialised, initialise);
  Forward forward(on_diag, user);
  SourceFilter filter{source_test, source_rewrite};
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
    for (const char *arg : argv) {
      if (llvm::StringRef(arg) == "-DCDPC_TEST_CLANG_CRASH")
        abort();
      // And of LLVM's fatal errors (llvm_shim.cpp's `on_fatal_error`).
      if (llvm::StringRef(arg) == "-DCDPC_TEST_LLVM_FATAL")
        llvm::report_fatal_error("cdpc's test of LLVM's fatal errors");
    }
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
      if (!run_cc1(job.getArguments(), argv[0], forward, filter) || forward.getNumErrors() > 0) {
        result = forward.unsupported_job ? CDPC_CLANG_UNSUPPORTED_JOB : CDPC_CLANG_ERRORS;
        return;
      }
    }
  });
  if (!finished) {
    std::string reason = cdpc_take_fatal_reason();
    if (!reason.empty())
      forward.stopped(reason);
    return CDPC_CLANG_CRASHED;
  }
  return result;
}
