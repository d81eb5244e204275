#include <cstdio>
int main(int argc, char** argv) { std::puts("magnetar"); return 0; }
