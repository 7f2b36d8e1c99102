// codes: a staged tile's global class indices (bytes) mapped in place to the
// tile's local indices through a 256-entry table (src/classes.rs map_bytes is
// the plain Rust twin; TileCompaction::device_table builds the table), so the
// host only copies codes into pinned memory and never compacts a tile.
// Each work-item maps four bytes; the last one stops at n.
__kernel void map_codes(__global uchar *codes, __global const uchar *table, uint n) {
    __local uchar t[256];
    for (uint i = get_local_id(0); i < 256; i += get_local_size(0)) t[i] = table[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    size_t at = (size_t)get_global_id(0) * 4;
    if (at + 4 <= n) {
        uchar4 v = vload4(0, codes + at);
        vstore4((uchar4)(t[v.x], t[v.y], t[v.z], t[v.w]), 0, codes + at);
    } else {
        for (size_t i = at; i < n; i++) codes[i] = t[codes[i]];
    }
}
