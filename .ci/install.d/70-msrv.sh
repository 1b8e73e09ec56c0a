# The MSRV toolchain, Cargo.toml's `rust-version`, for .ci/check.d/70-msrv.sh: the minimal
# profile (rustc, cargo, rust-std). About 20 to 40 s (downloads and unpacking).
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
[ -n "$msrv" ] || { echo "error: no rust-version in Cargo.toml" >&2; return 1; }
rustup toolchain install "$msrv" --profile minimal
