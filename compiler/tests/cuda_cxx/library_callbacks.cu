// Kernel templates that only the C++ standard library's templates instantiate: host code hands
// a functor, a generic lambda or a class template's object to `std::for_each`, `std::function`
// or `std::transform`, whose bodies call it. The device side never needs the library's host
// bodies, but it must define every kernel those calls instantiate, as nvcc does.
#include <algorithm>
#include <functional>
#include <type_traits>
#include <vector>

template <class T> __global__ void bump(T *p) { *p += T(1); }

template <class T> __global__ void scale(T *p, T by) { *p *= by; }

template <class T> __global__ void clear(T *p) { *p = T(); }

// Instantiated for float by std::for_each's body alone.
struct Launch {
    template <class T> void operator()(T *p) const { bump<T><<<1, 1>>>(p); }
};

// Scaler<int>::operator() is instantiated by std::function's invoker.
template <class T> struct Scaler {
    T by;
    void operator()(T *p) const { scale<T><<<1, 1>>>(p, by); }
};

void launch_all(std::vector<float *> &floats, std::vector<double *> &doubles, std::vector<int *> &ints,
                std::vector<long *> &longs) {
    std::for_each(floats.begin(), floats.end(), Launch());
    std::for_each(doubles.begin(), doubles.end(), [](auto p) { bump<std::remove_pointer_t<decltype(p)>><<<1, 1>>>(p); });
    std::function<void(int *)> by_two = Scaler<int>{2};
    for (int *p : ints)
        by_two(p);
    std::vector<long *> done(longs.size());
    std::transform(longs.begin(), longs.end(), done.begin(), [](auto p) {
        clear<std::remove_pointer_t<decltype(p)>><<<1, 1>>>(p);
        return p;
    });
}

// The device-side launch every file of this folder has.
__global__ void parent(unsigned *p) { bump<unsigned><<<1, 1>>>(p); }
