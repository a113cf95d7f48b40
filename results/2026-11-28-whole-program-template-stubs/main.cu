#include <cstdio>
int run1(); int run2();
int main() { int a = run1(); int b = run2(); printf("f1's launch wrote %d, f2's %d\n", a, b); return 0; }
