# Distributed under the Apache License 2.0, as cdpc.

#[=======================================================================[.rst:
FindCdpc
--------

Finds cdpc, the compiler for CUDA dynamic parallelism, and the NVIDIA pieces a host program
that launches its kernels links with; defines functions that compile a project's ``.cu``
device code with cdpc. CMake's own CUDA language drives nvcc, so cdpc enters as custom
commands, wrapped here.

Put this folder on the module path and find it::

  list(APPEND CMAKE_MODULE_PATH /path/to/cdpc/cmake)   # or -DCMAKE_MODULE_PATH=...
  find_package(Cdpc 0.1 REQUIRED)

Imported targets
^^^^^^^^^^^^^^^^

``Cdpc::cdpc``
  The ``cdpc`` executable.

Result variables
^^^^^^^^^^^^^^^^

``Cdpc_FOUND``, ``Cdpc_VERSION``
  Whether cdpc was found, and its version (``cdpc --version``).
``Cdpc_HOST_FOUND``
  Whether everything :command:`cdpc_add_cuda_library` needs was found too: ``nvcc`` (its
  device link writes the registration of the device code), ``cuda_runtime.h``,
  ``libcudadevrt.a`` and ``libcudart_static.a``.

Cache variables
^^^^^^^^^^^^^^^

``CDPC_EXECUTABLE``
  The cdpc program: ``cdpc`` on ``PATH``, or under ``CDPC_ROOT`` (``bin/``).
``CDPC_CUDA_HOME``
  A CUDA toolkit or NVIDIA wheel folder (``nvidia/cu13`` of a ``pip install --target``); by
  default the ``CUDA_HOME`` environment variable. When set, cdpc gets it as ``--cuda-home``
  and the host pieces below are looked for there first.
``CDPC_NVCC``, ``CDPC_CUDA_INCLUDE_DIR``, ``CDPC_CUDADEVRT_LIBRARY``, ``CDPC_CUDART_STATIC_LIBRARY``
  nvcc, the folder of ``cuda_runtime.h``, ``libcudadevrt.a`` and ``libcudart_static.a``.
``CDPC_ARCH``
  The GPU architecture when a call names none (default ``sm_90``).

Functions
^^^^^^^^^

.. command:: cdpc_add_cubin

  ::

    cdpc_add_cubin(<name> SOURCES <file>... [ARCH <sm_XX>] [OUTPUT <file>] [OPTIONS <option>...])

  Compiles each source's device code on its own (``cdpc -dc --emit obj``, the device object
  alone, as a cubin needs no host code: ``extern __device__`` symbols are left to the link)
  and links them with libcudadevrt into one cubin for
  ``cuModuleLoad`` (``cdpc -dlink``). ``OUTPUT`` defaults to ``<name>.cubin`` in the current
  binary folder. Makes a target ``<name>``, built by ``all``, whose ``CDPC_CUBIN`` property is
  the cubin's path. ``OPTIONS`` go to every cdpc command (``-lineinfo``, ``-O2``, ``-DNAME``).

.. command:: cdpc_add_cuda_library

  ::

    cdpc_add_cuda_library(<name> SOURCES <file>... [ARCH <sm_XX>] [LAUNCHERS] [OPTIONS <option>...])

  What ``nvcc -dc`` and ``nvcc -dlink`` make for a host program: each source becomes an object
  like ``nvcc -dc``'s (``cdpc -dc``: the file's own host code, its kernels' host stubs and
  their registration, its relocatable device code), and nvcc's device link writes the
  registration of all of it. With ``LAUNCHERS`` each source is read as the kernel language
  instead (``cdpc -x cdp --emit host-obj``): its object holds a host stub and a launcher per
  kernel, declared with ``cdpc_launch_<kernel>()`` in a header ``<stem>.h``, for host code
  that is no CUDA. ``<name>`` is an ``INTERFACE`` library: an executable that links it gets the
  objects, the headers' folder, CUDA's include folder, libcudadevrt, the static CUDA runtime
  and ``dl``, ``pthread`` and ``rt``. Needs ``Cdpc_HOST_FOUND``.
#]=======================================================================]

cmake_minimum_required(VERSION 3.19) # INTERFACE libraries with dependencies
include(FindPackageHandleStandardArgs)

set(CDPC_CUDA_HOME "$ENV{CUDA_HOME}" CACHE PATH "a CUDA toolkit or NVIDIA wheel folder for cdpc (--cuda-home)")
set(CDPC_ARCH sm_90 CACHE STRING "the GPU architecture cdpc compiles for when a call names none")

find_program(CDPC_EXECUTABLE NAMES cdpc HINTS ${CDPC_ROOT} ENV CDPC_ROOT PATH_SUFFIXES bin
  DOC "the cdpc compiler")

if(CDPC_EXECUTABLE)
  execute_process(COMMAND "${CDPC_EXECUTABLE}" --version OUTPUT_VARIABLE _cdpc_version_text
    RESULT_VARIABLE _cdpc_version_status ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_cdpc_version_status EQUAL 0 AND _cdpc_version_text MATCHES "([0-9]+\\.[0-9]+\\.[0-9]+)")
    set(Cdpc_VERSION "${CMAKE_MATCH_1}")
  endif()
endif()

# The host side: a toolkit (bin/, include/, lib64/ or lib/) or a wheel folder (the same under
# nvidia/cu13/), CDPC_CUDA_HOME first, then the usual places.
set(_cdpc_hints)
if(CDPC_CUDA_HOME)
  list(APPEND _cdpc_hints "${CDPC_CUDA_HOME}" "${CDPC_CUDA_HOME}/nvidia/cu13")
endif()
find_program(CDPC_NVCC NAMES nvcc HINTS ${_cdpc_hints} PATH_SUFFIXES bin
  DOC "nvcc, whose device link registers the device code of cdpc's host objects")
find_path(CDPC_CUDA_INCLUDE_DIR cuda_runtime.h HINTS ${_cdpc_hints} PATH_SUFFIXES include
  DOC "the folder of cuda_runtime.h")
find_library(CDPC_CUDADEVRT_LIBRARY NAMES libcudadevrt.a HINTS ${_cdpc_hints} PATH_SUFFIXES lib64 lib
  DOC "libcudadevrt.a, the device runtime")
find_library(CDPC_CUDART_STATIC_LIBRARY NAMES libcudart_static.a HINTS ${_cdpc_hints} PATH_SUFFIXES lib64 lib
  DOC "libcudart_static.a, the CUDA runtime")
mark_as_advanced(CDPC_EXECUTABLE CDPC_NVCC CDPC_CUDA_INCLUDE_DIR CDPC_CUDADEVRT_LIBRARY CDPC_CUDART_STATIC_LIBRARY)

if(CDPC_NVCC AND CDPC_CUDA_INCLUDE_DIR AND CDPC_CUDADEVRT_LIBRARY AND CDPC_CUDART_STATIC_LIBRARY)
  set(Cdpc_HOST_FOUND TRUE)
else()
  set(Cdpc_HOST_FOUND FALSE)
endif()

find_package_handle_standard_args(Cdpc REQUIRED_VARS CDPC_EXECUTABLE VERSION_VAR Cdpc_VERSION)

if(Cdpc_FOUND AND NOT TARGET Cdpc::cdpc)
  add_executable(Cdpc::cdpc IMPORTED)
  set_target_properties(Cdpc::cdpc PROPERTIES IMPORTED_LOCATION "${CDPC_EXECUTABLE}")
endif()

# The options every cdpc command of a call gets: the architecture, --cuda-home, OPTIONS.
function(_cdpc_common_options out arch)
  if(NOT arch)
    set(arch "${CDPC_ARCH}")
  endif()
  set(options "-arch=${arch}")
  if(CDPC_CUDA_HOME)
    list(APPEND options --cuda-home "${CDPC_CUDA_HOME}")
  endif()
  set(${out} ${options} ${ARGN} PARENT_SCOPE)
endfunction()

# How a compilation's custom command learns the headers its source reads: cdpc writes a
# dependency list beside the object (-MD -MF, paths relative to the command's folder, the
# current binary folder) and add_custom_command reads it (DEPFILE), so that changing a header
# rebuilds the objects that include it. DEPFILE needs Ninja or CMake 3.20; older Makefile
# generators rebuild on the source's change only.
function(_cdpc_depfile out_options out_keyword object)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.20 OR CMAKE_GENERATOR MATCHES "Ninja")
    set(${out_options} -MD -MF "${object}.d" PARENT_SCOPE)
    set(${out_keyword} DEPFILE "${object}.d" PARENT_SCOPE)
  else()
    set(${out_options} "" PARENT_SCOPE)
    set(${out_keyword} "" PARENT_SCOPE)
  endif()
endfunction()

# The checks both functions make of their parsed arguments (a macro: it reads the caller's
# arg_* variables).
macro(_cdpc_check_arguments function name)
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${function}(${name}): no SOURCES")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${function}(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
endmacro()

function(cdpc_add_cubin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ARCH;OUTPUT" "SOURCES;OPTIONS")
  _cdpc_check_arguments(cdpc_add_cubin ${name})
  _cdpc_common_options(options "${arg_ARCH}" ${arg_OPTIONS})
  if(NOT arg_OUTPUT)
    set(arg_OUTPUT "${name}.cubin")
  endif()
  get_filename_component(cubin "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${name}.cdpc")
  set(objects)
  foreach(source IN LISTS arg_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE)
    get_filename_component(stem "${source}" NAME_WE)
    set(object "${dir}/${stem}.o")
    _cdpc_depfile(list depfile "${object}")
    add_custom_command(OUTPUT "${object}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
      COMMAND Cdpc::cdpc -dc --emit obj ${options} ${list} "${source}" -o "${object}"
      DEPENDS "${source}" Cdpc::cdpc
      ${depfile}
      COMMENT "cdpc -dc ${stem}"
      VERBATIM)
    list(APPEND objects "${object}")
  endforeach()
  add_custom_command(OUTPUT "${cubin}"
    COMMAND Cdpc::cdpc -dlink ${options} ${objects} -o "${cubin}"
    DEPENDS ${objects}
    COMMENT "cdpc -dlink ${arg_OUTPUT}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${cubin}")
  set_target_properties(${name} PROPERTIES CDPC_CUBIN "${cubin}")
endfunction()

function(cdpc_add_cuda_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "LAUNCHERS" "ARCH" "SOURCES;OPTIONS")
  _cdpc_check_arguments(cdpc_add_cuda_library ${name})
  if(NOT Cdpc_HOST_FOUND)
    message(FATAL_ERROR "cdpc_add_cuda_library(${name}) needs nvcc, cuda_runtime.h, libcudadevrt.a and "
      "libcudart_static.a (found: CDPC_NVCC=${CDPC_NVCC} CDPC_CUDA_INCLUDE_DIR=${CDPC_CUDA_INCLUDE_DIR} "
      "CDPC_CUDADEVRT_LIBRARY=${CDPC_CUDADEVRT_LIBRARY} CDPC_CUDART_STATIC_LIBRARY=${CDPC_CUDART_STATIC_LIBRARY}): "
      "set CDPC_CUDA_HOME to a CUDA toolkit or NVIDIA wheel folder")
  endif()
  set(arch "${arg_ARCH}")
  if(NOT arch)
    set(arch "${CDPC_ARCH}")
  endif()
  _cdpc_common_options(options "${arch}" ${arg_OPTIONS})
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${name}.cdpc")
  set(objects)
  set(headers)
  foreach(source IN LISTS arg_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE)
    get_filename_component(stem "${source}" NAME_WE)
    set(object "${dir}/${stem}.host.o")
    _cdpc_depfile(list depfile "${object}")
    if(arg_LAUNCHERS)
      set(header "${dir}/${stem}.h")
      add_custom_command(OUTPUT "${object}" "${header}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
        COMMAND Cdpc::cdpc -x cdp --emit host-obj ${options} ${list} "${source}" -o "${object}" --host-header "${header}"
        DEPENDS "${source}" Cdpc::cdpc
        ${depfile}
        COMMENT "cdpc --emit host-obj ${stem}"
        VERBATIM)
      list(APPEND headers "${header}")
    else()
      add_custom_command(OUTPUT "${object}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
        COMMAND Cdpc::cdpc -dc ${options} ${list} "${source}" -o "${object}"
        DEPENDS "${source}" Cdpc::cdpc
        ${depfile}
        COMMENT "cdpc -dc ${stem}"
        VERBATIM)
    endif()
    list(APPEND objects "${object}")
  endforeach()
  set(dlink "${dir}/dlink.o")
  add_custom_command(OUTPUT "${dlink}"
    COMMAND "${CDPC_NVCC}" -dlink "-arch=${arch}" ${objects} -o "${dlink}"
    DEPENDS ${objects}
    COMMENT "nvcc -dlink ${name}"
    VERBATIM)
  add_custom_target(${name}_objects DEPENDS ${objects} ${headers} "${dlink}")
  add_library(${name} INTERFACE)
  add_dependencies(${name} ${name}_objects)
  target_include_directories(${name} INTERFACE "${dir}" "${CDPC_CUDA_INCLUDE_DIR}")
  target_link_libraries(${name} INTERFACE ${objects} "${dlink}"
    "${CDPC_CUDADEVRT_LIBRARY}" "${CDPC_CUDART_STATIC_LIBRARY}" dl pthread rt)
endfunction()
