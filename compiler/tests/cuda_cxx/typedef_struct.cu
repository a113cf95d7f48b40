typedef struct { int x, y; double w; } Point;
__global__ void child(Point *out, Point p) { out[threadIdx.x] = p; }
__global__ void parent(Point *out) { Point p = {1, 2, 3.0}; child<<<1, 8>>>(out, p); }
