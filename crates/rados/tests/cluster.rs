//! Against a running cluster: `CEPH_CONF` names its config
//! (`scripts/ceph-test-cluster.sh start DIR` prints it; `scripts/test`
//! starts one and sets it). Objects go to the pool `ndpdb` under names
//! unique to this process.

use std::path::PathBuf;
use std::sync::Arc;

use ndpdb_rados::{Cluster, Error, Pool, WriteOp};

fn pool() -> Option<Pool> {
    let Some(conf) = std::env::var_os("CEPH_CONF") else {
        eprintln!(
            "skipped: CEPH_CONF is not set (scripts/test starts a cluster with scripts/ceph-test-cluster.sh)"
        );
        return None;
    };
    let cluster = Cluster::connect(&PathBuf::from(conf)).expect("connect");
    Some(cluster.pool("ndpdb").expect("pool ndpdb"))
}

/// An object name no other test or run shares.
fn oid(name: &str) -> String {
    format!("test.{}.{name}", std::process::id())
}

#[test]
fn objects_are_written_read_listed_and_removed() {
    let Some(pool) = pool() else { return };
    let o = oid("plain");
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    pool.write_full(&o, &data).unwrap();
    assert_eq!(pool.stat(&o).unwrap(), Some(100_000));
    assert_eq!(pool.read_all(&o).unwrap(), data);
    assert_eq!(pool.read(&o, 99_990, 100).unwrap(), data[99_990..]);
    pool.write(&o, b"abc", 100_000).unwrap();
    assert_eq!(
        pool.read(&o, 99_999, 10).unwrap(),
        [data[99_999], b'a', b'b', b'c']
    );
    assert!(pool.objects().unwrap().contains(&o));
    pool.remove(&o).unwrap();
    assert_eq!(pool.stat(&o).unwrap(), None);
    assert!(matches!(pool.remove(&o), Err(Error::NotFound(_))));
    assert!(matches!(pool.read_all(&o), Err(Error::NotFound(_))));
}

#[test]
fn compare_and_write_rejects_a_stale_value() {
    let Some(pool) = pool() else { return };
    let o = oid("cas");
    pool.write_full(&o, &[1u8; 16]).unwrap();
    assert!(!pool
        .compare_and_write(&o, 0, &[2u8; 16], &[3u8; 16])
        .unwrap());
    assert_eq!(pool.read_all(&o).unwrap(), [1u8; 16]);
    assert!(pool
        .compare_and_write(&o, 0, &[1u8; 16], &[3u8; 16])
        .unwrap());
    assert_eq!(pool.read_all(&o).unwrap(), [3u8; 16]);
    pool.remove(&o).unwrap();
}

/// Eight threads add to one counter by compare-and-write: no increment
/// is lost, as the shared lock table's CAS needs.
#[test]
fn concurrent_compare_and_write_loses_no_update() {
    let Some(pool) = pool() else { return };
    let pool = Arc::new(pool);
    let o = oid("counter");
    pool.write_full(&o, &0u64.to_le_bytes()).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (pool, o) = (pool.clone(), o.clone());
            std::thread::spawn(move || {
                for _ in 0..25 {
                    loop {
                        let now = pool.read(&o, 0, 8).unwrap();
                        let v = u64::from_le_bytes(now.as_slice().try_into().unwrap());
                        if pool
                            .compare_and_write(&o, 0, &now, &(v + 1).to_le_bytes())
                            .unwrap()
                        {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let v = pool.read(&o, 0, 8).unwrap();
    assert_eq!(u64::from_le_bytes(v.as_slice().try_into().unwrap()), 200);
    pool.remove(&o).unwrap();
}

#[test]
fn a_write_operation_applies_all_or_nothing() {
    let Some(pool) = pool() else { return };
    let o = oid("atomic");
    pool.operate(
        &o,
        &WriteOp::new()
            .create_exclusive()
            .write_full(b"version 1.......")
            .omap_set([("a", &b"1"[..]), ("b", &b"2"[..])]),
    )
    .unwrap();
    // A failing compare: neither the write nor the omap change lands.
    let stale = WriteOp::new()
        .compare(0, b"version 0")
        .write(0, b"version 2")
        .omap_set([("c", &b"3"[..])])
        .omap_remove(["a"]);
    match pool.operate(&o, &stale) {
        Err(Error::Mismatch { offset, .. }) => assert_eq!(offset, 8),
        other => panic!("{other:?}"),
    }
    assert_eq!(pool.read_all(&o).unwrap(), b"version 1.......");
    let keys = |p: &Pool| -> Vec<String> {
        p.omap(&o, "", 100)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    assert_eq!(keys(&pool), ["a", "b"]);
    // The same steps with the right compare land together.
    let current = WriteOp::new()
        .compare(0, b"version 1")
        .write(0, b"version 2")
        .omap_set([("c", &b"3"[..])])
        .omap_remove(["a"]);
    pool.operate(&o, &current).unwrap();
    assert_eq!(&pool.read_all(&o).unwrap()[..9], b"version 2");
    assert_eq!(keys(&pool), ["b", "c"]);
    assert!(matches!(
        pool.operate(&o, &WriteOp::new().create_exclusive()),
        Err(Error::Exists(_))
    ));
    pool.remove(&o).unwrap();
}

#[test]
fn omap_pages_in_key_order() {
    let Some(pool) = pool() else { return };
    let o = oid("omap");
    let pairs: Vec<(String, Vec<u8>)> = (0..10)
        .rev()
        .map(|i| (format!("key{i:02}"), vec![i as u8; i]))
        .collect();
    pool.operate(
        &o,
        &WriteOp::new().omap_set(pairs.iter().map(|(k, v)| (k.as_str(), v.as_slice()))),
    )
    .unwrap();
    let first = pool.omap(&o, "", 4).unwrap();
    assert_eq!(
        first.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["key00", "key01", "key02", "key03"]
    );
    assert_eq!(first[3].1, vec![3u8; 3]);
    let rest = pool.omap(&o, "key03", 100).unwrap();
    assert_eq!(rest.len(), 6);
    assert_eq!(rest[0].0, "key04");
    pool.remove(&o).unwrap();
}

/// Debian's `hello` class stands in for ndpdb's own: a method run inside
/// the OSD, once and fanned out over many objects.
#[test]
fn object_class_calls_run_in_the_osds() {
    let Some(pool) = pool() else { return };
    let names: Vec<String> = (0..24).map(|i| oid(&format!("fan{i}"))).collect();
    for n in &names {
        pool.write_full(n, b"x").unwrap();
    }
    let reply = pool
        .exec(&names[0], "hello", "say_hello", b"ndpdb", 64)
        .unwrap();
    assert_eq!(reply, b"Hello, ndpdb!");
    let inputs: Vec<String> = (0..24).map(|i| format!("object {i}")).collect();
    let calls: Vec<(&str, &[u8])> = names
        .iter()
        .zip(&inputs)
        .map(|(n, i)| (n.as_str(), i.as_bytes()))
        .collect();
    let replies = pool.exec_all(&calls, "hello", "say_hello", 64).unwrap();
    for (i, r) in replies.into_iter().enumerate() {
        assert_eq!(r.unwrap(), format!("Hello, object {i}!").as_bytes());
    }
    assert!(matches!(
        pool.exec(&names[0], "hello", "say_hello", b"ndpdb", 4),
        Err(Error::ReplyTooLarge { .. })
    ));
    let unknown = pool.exec(&names[0], "hello", "no_such_method", b"", 64);
    assert!(unknown.is_err(), "{unknown:?}");
    for n in &names {
        pool.remove(n).unwrap();
    }
}

/// A cluster that is not there is an error within the configured mount
/// timeout, not a hang.
#[test]
fn a_missing_cluster_is_a_connect_error() {
    if let Err(e) = ndpdb_rados::available() {
        eprintln!("skipped: {e}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = dir.path().join("ceph.conf");
    std::fs::write(
        &conf,
        format!(
            "[global]\nmon host = v2:127.0.0.1:{port}\nauth client required = none\nclient mount timeout = 2\nlog file = /dev/null\n"
        ),
    )
    .unwrap();
    let t = std::time::Instant::now();
    match Cluster::connect(&conf) {
        Err(Error::Connect { .. }) => {}
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected to nothing"),
    }
    assert!(t.elapsed() < std::time::Duration::from_secs(15));
}

/// ndpdb's own class (`crates/cls`), loaded by the OSDs: a page scrub
/// runs where each object lies and only its 40-byte summary comes back.
#[test]
fn the_ndp_class_scrubs_pages_inside_the_osds() {
    use ndpdb_formats::ids::{Lpn, TableId};
    use ndpdb_formats::page::scrub::Scrub;
    use ndpdb_formats::page::{PageBuf, PAGE_SIZE};
    use ndpdb_formats::types::DataType;

    let Some(pool) = pool() else { return };
    let sealed = |lpn: u64| {
        let mut p = PageBuf::new(TableId(1), Lpn(lpn), &[DataType::BigInt, DataType::Text]);
        p.seal();
        p.as_bytes().to_vec()
    };
    let names: Vec<String> = (0..6).map(|i| oid(&format!("pages{i}"))).collect();
    for (i, n) in names.iter().enumerate() {
        // Object i: 64 sealed pages, one never written, and in the last
        // object one flipped byte in page 10.
        let mut run: Vec<u8> = (0..64).flat_map(|p| sealed(i as u64 * 100 + p)).collect();
        run.extend(vec![0u8; PAGE_SIZE]);
        if i == 5 {
            run[10 * PAGE_SIZE + 100] ^= 1;
        }
        pool.write_full(n, &run).unwrap();
    }
    let calls: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &[][..])).collect();
    let replies = pool.exec_all(&calls, "ndp", "scrub_v1", 64).unwrap();
    for (i, r) in replies.into_iter().enumerate() {
        let s = Scrub::decode(&r.unwrap()).unwrap();
        let expected = if i == 5 {
            Scrub {
                pages: 65,
                verified: 63,
                never_written: 1,
                bad: 1,
                first_bad: Some(10),
            }
        } else {
            Scrub {
                pages: 65,
                verified: 64,
                never_written: 1,
                bad: 0,
                first_bad: None,
            }
        };
        assert_eq!(s, expected, "object {i}");
    }
    for n in &names {
        pool.remove(n).unwrap();
    }
}
