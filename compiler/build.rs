fn main() {
    // The grammar lives beside the lexer in src/front/; lalrpop writes the parser into OUT_DIR.
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .process()
        .expect("lalrpop grammar failed to generate");
}
