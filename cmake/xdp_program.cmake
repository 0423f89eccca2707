# tickgate's XDP program (feed/xdp_divert.bpf.c), built with Debian's clang
# for the BPF target and embedded as a C++ source (cmake/embed_bytes.cmake).
# Included by the main build and the fuzz build; sets TICKGATE_XDP_OBJECT_CPP
# (the generated source to compile into the library) and PkgConfig::XDP.
get_filename_component(_tg_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XDP REQUIRED IMPORTED_TARGET libxdp libbpf)
find_program(TICKGATE_BPF_CLANG NAMES clang clang-14 REQUIRED)
set(_tg_xdp_object ${CMAKE_BINARY_DIR}/xdp_divert.bpf.o)
set(TICKGATE_XDP_OBJECT_CPP ${CMAKE_BINARY_DIR}/xdp_divert_object.cpp)
add_custom_command(OUTPUT ${_tg_xdp_object}
  COMMAND ${TICKGATE_BPF_CLANG} -O2 -g -target bpf -Wall -Werror
          -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}
          -c ${_tg_root}/feed/xdp_divert.bpf.c -o ${_tg_xdp_object}
  DEPENDS ${_tg_root}/feed/xdp_divert.bpf.c
  COMMENT "XDP program (clang -target bpf)")
add_custom_command(OUTPUT ${TICKGATE_XDP_OBJECT_CPP}
  COMMAND ${CMAKE_COMMAND} -DINPUT=${_tg_xdp_object} -DOUTPUT=${TICKGATE_XDP_OBJECT_CPP}
          -DSYMBOL=xdp_divert_object -P ${_tg_root}/cmake/embed_bytes.cmake
  DEPENDS ${_tg_xdp_object} ${_tg_root}/cmake/embed_bytes.cmake)
