// emit: host-obj
// A host variable initialised with a managed variable's address: nvcc makes that a dynamic
// initialisation that runs before the runtime has loaded the module, so there is no memory yet.
__managed__ int counter = 7;
int *alias = &counter;
__global__ void bump() { counter += 1; }
