#include <cstdio>

#include "dp.h"

int main() {
    const int blocks = 8;
    long long sum = dp_checksum(blocks);
    long long expected = dp_expected(blocks);
    std::printf("checksum %lld (expected %lld)\n", sum, expected);
    return sum == expected ? 0 : 1;
}
