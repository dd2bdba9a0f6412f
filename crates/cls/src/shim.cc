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
int64_t ndp_cls_scan(const uint8_t *request, size_t request_len, const uint8_t *object,
                     size_t object_len, uint8_t **reply, size_t *reply_len);
void ndp_cls_free(uint8_t *reply, size_t len);
}

namespace {

cls_handle_t h_class;
cls_method_handle_t h_scrub;
cls_method_handle_t h_scan;
cls_method_handle_t h_versions;

// The whole object (a page store object is at most 4 MiB).
int read_object(cls_method_context_t hctx, ceph::bufferlist *bl) {
  uint64_t size = 0;
  time_t mtime = 0;
  int r = cls_cxx_stat(hctx, &size, &mtime);
  if (r < 0) return r;
  if (size > INT32_MAX) return -EFBIG;
  return cls_cxx_read(hctx, 0, static_cast<int>(size), bl);
}

// scrub_v1: verifies every 8 KiB page of the object (see
// ndpdb_formats::page::scrub); the reply is the 40-byte summary.
int scrub(cls_method_context_t hctx, ceph::bufferlist *in, ceph::bufferlist *out) {
  (void)in;
  ceph::bufferlist bl;
  int r = read_object(hctx, &bl);
  if (r < 0) return r;
  uint8_t reply[64];
  int64_t n = ndp_cls_scrub(reinterpret_cast<const uint8_t *>(bl.c_str()), bl.length(), reply,
                            sizeof reply);
  if (n < 0) return static_cast<int>(n);
  out->append(reinterpret_cast<const char *>(reply), static_cast<unsigned>(n));
  return 0;
}

// scan_v1: one object's share of an NDP scan (ndpdb_scan::object_scan);
// the input is the request, the reply the partial result or the error.
int scan(cls_method_context_t hctx, ceph::bufferlist *in, ceph::bufferlist *out) {
  ceph::bufferlist bl;
  int r = read_object(hctx, &bl);
  if (r < 0) return r;
  uint8_t *reply = nullptr;
  size_t len = 0;
  int64_t n = ndp_cls_scan(reinterpret_cast<const uint8_t *>(in->c_str()), in->length(),
                           reinterpret_cast<const uint8_t *>(bl.c_str()), bl.length(), &reply,
                           &len);
  if (n < 0) return static_cast<int>(n);
  out->append(reinterpret_cast<const char *>(reply), static_cast<unsigned>(len));
  ndp_cls_free(reply, len);
  return 0;
}

}  // namespace

// Called by __cls_init (src/lib.rs), the one symbol the OSD looks up.
extern "C" void ndp_cls_register() {
  CLS_LOG(1, "loading cls_ndp");
  cls_register("ndp", &h_class);
  cls_register_cxx_method(h_class, "scrub_v1", CLS_METHOD_RD, scrub, &h_scrub);
  cls_register_cxx_method(h_class, "scan_v1", CLS_METHOD_RD, scan, &h_scan);
  // The same entry point; a method of its own so that an OSD which
  // loaded the class before update reads existed answers EOPNOTSUPP.
  cls_register_cxx_method(h_class, "versions_v1", CLS_METHOD_RD, scan, &h_versions);
}
