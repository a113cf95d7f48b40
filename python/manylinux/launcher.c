/* bin/cdpc of the release archive (`cargo xtask dist`): the `cdpc` command, which lives in
   lib/libcdpc.so (cdpc_main, python/src/lib.rs) beside the C API, so that the archive holds
   LLVM and Clang once. Linked with an rpath of $ORIGIN/../lib. */
int cdpc_main(int argc, const char *const *argv);

int main(int argc, char **argv) {
    return cdpc_main(argc, (const char *const *)argv);
}
