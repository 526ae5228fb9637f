# BPF build rules: vmlinux.h from the pinned sched_ext kernel's BTF, and one
# function that turns a .bpf.c file into an object and a bpftool skeleton.
#
# Inputs (cache variables, filled in by ./akts setup):
#   AKTS_TOOLCHAIN  libbpf + bpftool built from the kernel source (include/, lib*/, bin/)
#   AKTS_KERNEL_DIR the pinned kernel: vmlinux (with .BTF) and src/tools/sched_ext

find_program(BPF_CLANG NAMES clang-19 clang-18 clang-17 clang-16 REQUIRED)
find_program(BPFTOOL bpftool PATHS "${AKTS_TOOLCHAIN}/bin" NO_DEFAULT_PATH REQUIRED)
find_library(LIBBPF_STATIC libbpf.a PATHS "${AKTS_TOOLCHAIN}/lib64" "${AKTS_TOOLCHAIN}/lib" NO_DEFAULT_PATH REQUIRED)
set(LIBBPF_INCLUDE_DIR "${AKTS_TOOLCHAIN}/include")
set(AKTS_VMLINUX "${AKTS_KERNEL_DIR}/vmlinux")
set(SCX_INCLUDE_DIR "${AKTS_KERNEL_DIR}/src/tools/sched_ext/include")
if(NOT EXISTS "${AKTS_VMLINUX}" OR NOT EXISTS "${SCX_INCLUDE_DIR}/scx/common.bpf.h")
  message(FATAL_ERROR "The pinned sched_ext kernel is missing under ${AKTS_KERNEL_DIR}: run ./akts setup")
endif()

set(BPF_GEN_DIR "${CMAKE_BINARY_DIR}/bpf")
file(MAKE_DIRECTORY "${BPF_GEN_DIR}")

# Never the build host's kernel: the target kernel's BTF is the only source.
add_custom_command(
  OUTPUT "${BPF_GEN_DIR}/vmlinux.h"
  COMMAND "${BPFTOOL}" btf dump file "${AKTS_VMLINUX}" format c > "${BPF_GEN_DIR}/vmlinux.h.tmp"
  COMMAND ${CMAKE_COMMAND} -E rename "${BPF_GEN_DIR}/vmlinux.h.tmp" "${BPF_GEN_DIR}/vmlinux.h"
  DEPENDS "${AKTS_VMLINUX}"
  COMMENT "vmlinux.h from the pinned kernel's BTF")
add_custom_target(akts_vmlinux_h DEPENDS "${BPF_GEN_DIR}/vmlinux.h")

# The anonymous tagged members in this kernel's BTF are dropped silently
# without -fms-extensions; -mcpu=v3 gives the 32-bit atomics UEI_RECORD uses.
set(AKTS_BPF_CFLAGS
  -g -O2 -target bpf -mcpu=v3 -mlittle-endian -D__TARGET_ARCH_x86
  -fms-extensions -Wno-microsoft-anon-tag -Wall -Wno-compare-distinct-pointer-types
  -I${BPF_GEN_DIR} -I${LIBBPF_INCLUDE_DIR} -I${SCX_INCLUDE_DIR} -I${SCX_INCLUDE_DIR}/bpf-compat
  -I${PROJECT_SOURCE_DIR}/bpf)

# akts_bpf_skeleton(<name> <source> [extra clang flags...]): builds <name>.bpf.o
# and <name>.skel.h (struct <name>_bpf) and adds both to target akts_bpf_<name>.
function(akts_bpf_skeleton name src)
  set(obj "${BPF_GEN_DIR}/${name}.bpf.o")
  set(skel "${BPF_GEN_DIR}/${name}.skel.h")
  file(GLOB headers CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/bpf/*.h" "${PROJECT_SOURCE_DIR}/bpf/policies/*.c")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND ${AKTS_LAUNCHER} "${BPF_CLANG}" ${AKTS_BPF_CFLAGS} ${ARGN} -c "${src}" -o "${obj}"
    DEPENDS "${src}" ${headers} "${BPF_GEN_DIR}/vmlinux.h"
    COMMENT "BPF ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT "${skel}"
    COMMAND "${BPFTOOL}" gen skeleton "${obj}" name "${name}_bpf" > "${skel}.tmp"
    COMMAND ${CMAKE_COMMAND} -E rename "${skel}.tmp" "${skel}"
    DEPENDS "${obj}"
    COMMENT "skeleton ${name}_bpf"
    VERBATIM)
  add_custom_target(akts_bpf_${name} DEPENDS "${skel}")
endfunction()

# akts_bpf_object(<name> <source>): builds <name>.bpf.o only (target akts_bpfobj_<name>), for objects the
# tests read as files (admission's static gate) and never open through a skeleton.
function(akts_bpf_object name src)
  set(obj "${BPF_GEN_DIR}/${name}.bpf.o")
  file(GLOB headers CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/bpf/*.h")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND ${AKTS_LAUNCHER} "${BPF_CLANG}" ${AKTS_BPF_CFLAGS} -c "${src}" -o "${obj}"
    DEPENDS "${src}" ${headers} "${BPF_GEN_DIR}/vmlinux.h"
    COMMENT "BPF ${name}"
    VERBATIM)
  add_custom_target(akts_bpfobj_${name} DEPENDS "${obj}")
endfunction()
