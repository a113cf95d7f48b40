struct Node { int v; Node *next; };
__global__ void child(int *out, Node *n) { out[threadIdx.x] = n->v; }
__global__ void parent(int *out) {
    Node *n = new Node{7, nullptr};
    child<<<1, 1>>>(out, n);
}
__global__ void cleanup(Node *n) { delete n; int *a = new int[4]; delete[] a; }
