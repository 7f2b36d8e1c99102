// The exact naive class-histogram filter (filled in by the next commit).
__kernel void naive_placeholder(__global int *a) { a[0] = 0; }
