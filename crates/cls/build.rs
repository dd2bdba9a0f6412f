//! Compiles the C++ shim against Ceph's `rados/objclass.h` when the
//! headers are there (Debian's rados-objclass-dev); without them the
//! library builds with no class in it and says so.

fn main() {
    println!("cargo:rerun-if-changed=src/shim.cc");
    println!("cargo:rustc-check-cfg=cfg(ndp_cls_shim)");
    let header = std::path::Path::new("/usr/include/rados/objclass.h");
    if !header.exists() {
        // Cargo does not rerun a build script for a path that did not
        // exist; the folder's entries change when the headers are
        // installed (scripts/ceph-test-cluster.sh install).
        println!("cargo:rerun-if-changed=/usr/include/rados");
        println!("cargo:rerun-if-changed=/usr/include");
        println!(
            "cargo:warning=no {}: libcls_ndp.so is built without its Ceph entry points (install rados-objclass-dev)",
            header.display()
        );
        return;
    }
    println!("cargo:rerun-if-changed={}", header.display());
    cc::Build::new()
        .cpp(true)
        .file("src/shim.cc")
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .warnings(true)
        .compile("cls_ndp_shim");
    println!("cargo:rustc-cfg=ndp_cls_shim");
}
