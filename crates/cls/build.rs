//! Compiles the C++ shim against Ceph's `rados/objclass.h` when the
//! headers are there (Debian's rados-objclass-dev); without them the
//! library builds with no class in it and says so.

fn main() {
    println!("cargo:rerun-if-changed=src/shim.cc");
    // Installed later (scripts/ceph-test-cluster.sh), the header reruns this.
    println!("cargo:rerun-if-changed=/usr/include/rados/objclass.h");
    println!("cargo:rustc-check-cfg=cfg(ndp_cls_shim)");
    let header = std::path::Path::new("/usr/include/rados/objclass.h");
    if !header.exists() {
        println!(
            "cargo:warning=no {}: libcls_ndp.so is built without its Ceph entry points (install rados-objclass-dev)",
            header.display()
        );
        return;
    }
    cc::Build::new()
        .cpp(true)
        .file("src/shim.cc")
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .warnings(true)
        .compile("cls_ndp_shim");
    println!("cargo:rustc-cfg=ndp_cls_shim");
}
