#[test]
fn dump() {
    let cmds = std::fs::read_to_string("/tmp/p1/cmds.txt").unwrap();
    for c in cmds.lines() {
        let segs = yuyao_policy::segments(c);
        let ro = segs
            .as_ref()
            .map(|s| s.iter().all(yuyao_policy::readonly::segment_is_read_only))
            .unwrap_or(false);
        println!(
            "{ro} {c:?} => {:?}",
            segs.map(|v| v
                .into_iter()
                .map(|s| (s.program, s.args, s.assignments))
                .collect::<Vec<_>>())
        );
    }
}
