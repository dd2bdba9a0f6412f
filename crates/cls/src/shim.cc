// The Ceph side of cls_ndp: registers the class and its methods with the
// OSD and adapts bufferlists to the Rust kernels (src/lib.rs), which see
// only byte slices. Method names carry a version: an OSD keeps the class
// it loaded first, so a changed method gets a new name.
#include <rados/objclass.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

extern "C" {
// Rust (src/lib.rs). Returns bytes written to `out`, or a negative errno.
int64_t ndp_cls_scrub(const uint8_t *run, size_t len, uint8_t *out, size_t cap);
}

namespace {

cls_handle_t h_class;
cls_method_handle_t h_scrub;

// scrub_v1: verifies every 8 KiB page of the object (see
// ndpdb_formats::page::scrub); the reply is the 40-byte summary.
int scrub(cls_method_context_t hctx, ceph::bufferlist *in, ceph::bufferlist *out) {
  (void)in;
  uint64_t size = 0;
  time_t mtime = 0;
  int r = cls_cxx_stat(hctx, &size, &mtime);
  if (r < 0) return r;
  if (size > INT32_MAX) return -EFBIG;
  ceph::bufferlist bl;
  r = cls_cxx_read(hctx, 0, static_cast<int>(size), &bl);
  if (r < 0) return r;
  uint8_t reply[64];
  int64_t n = ndp_cls_scrub(reinterpret_cast<const uint8_t *>(bl.c_str()), bl.length(), reply,
                            sizeof reply);
  if (n < 0) return static_cast<int>(n);
  out->append(reinterpret_cast<const char *>(reply), static_cast<unsigned>(n));
  return 0;
}

}  // namespace

// Called by __cls_init (src/lib.rs), the one symbol the OSD looks up.
extern "C" void ndp_cls_register() {
  CLS_LOG(1, "loading cls_ndp");
  cls_register("ndp", &h_class);
  cls_register_cxx_method(h_class, "scrub_v1", CLS_METHOD_RD, scrub, &h_scrub);
}
