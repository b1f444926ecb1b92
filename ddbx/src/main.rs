//! The `ddbx` command: everything is in the library's [`ddbx::cli`].

fn main() {
    std::process::exit(ddbx::cli::main())
}
