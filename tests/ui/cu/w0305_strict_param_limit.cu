// flags: --strict-param-limit
struct Table { int entries[1100]; };
__global__ void child(struct Table table, int *out) { out[0] = table.entries[0]; }
__global__ void parent(int *out) {
    struct Table table;
    table.entries[0] = 7;
    child<<<1, 1>>>(table, out);
}
