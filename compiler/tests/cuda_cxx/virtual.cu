// Virtual functions in device code, objects made with `new` (no <new> included) and destroyed
// through a base pointer by a device-launched child.
struct Shape {
    __device__ virtual float area() const = 0;
    __device__ virtual ~Shape() {}
};
struct Square : Shape {
    float side;
    __device__ explicit Square(float s) : side(s) {}
    __device__ float area() const override { return side * side; }
};
struct Circle : Shape {
    float r;
    __device__ explicit Circle(float radius) : r(radius) {}
    __device__ float area() const override { return 3.14159265f * r * r; }
};
__global__ void child(float *out) {
    Shape *s = threadIdx.x % 2 ? static_cast<Shape *>(new Square(threadIdx.x)) : new Circle(threadIdx.x);
    out[threadIdx.x] = s->area();
    delete s;
}
__global__ void parent(float *out) { child<<<1, 32>>>(out); }
