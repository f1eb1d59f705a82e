# Cross build for aarch64 Linux with Debian's toolchain (g++-aarch64-linux-gnu) and the :arm64
# -dev packages (multiarch: headers in /usr/include, libraries in /usr/lib/aarch64-linux-gnu).
# Tests run under qemu-user (Debian qemu-user: qemu-aarch64) with `-L /`: the loader, libc and
# libstdc++ of Debian's arm64 packages (libc6:arm64, libstdc++6:arm64, which the :arm64 -dev
# packages install under /lib/aarch64-linux-gnu), the same runtime as the libraries linked. Not
# `-L /usr/aarch64-linux-gnu`: that mixes the cross toolchain's loader (libc6-arm64-cross) with
# the multiarch libc the -dev packages pulled in, and there every thread start hangs (even a bare
# std::thread; measured with qemu-aarch64 7.2). `make test-arm` uses it (docs/TESTING.md):
#   cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The emulated CPU is qemu's environment variable QEMU_CPU (default "max", which has dotprod and
# i8mm; QEMU_CPU=cortex-a53 has neither, cortex-a76 dotprod), so each kernel selection path can be
# tested; the tests pass the environment on to the tzero processes they start.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Find the target's libraries and packages only (never the host's x86-64 ones); programs (cmake,
# python3, pkg-config) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/cmake)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64 -L /)
