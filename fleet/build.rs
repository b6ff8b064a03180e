//! Compiles `proto/fleet.proto` with the `protoc` that the
//! `protoc-bin-vendored` crate ships, so a fresh machine needs no protoc.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    tonic_prost_build::compile_protos("proto/fleet.proto")?;
    Ok(())
}
