# Injected with -DCMAKE_PROJECT_INCLUDE=<this file> by scripts/build_interfaces.sh tf2_msgs.
#
# The CMake targets exported by the ROS 2 interface wheels (geometry_msgs, std_msgs, ...) carry the
# include directories of the interpreter the wheels were built with (for example the Python and NumPy
# headers of a manylinux build image). Those directories do not exist here, and CMake refuses to
# generate a build that links such targets. This drops every include directory of an imported target
# that does not exist, once the top-level CMakeLists.txt has been processed (so that the targets
# created by find_package() inside rosidl_generate_interfaces() are covered too).

function(kangaroo_wbc_drop_missing_include_dirs)
  get_directory_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    foreach(_property INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
      get_target_property(_dirs "${_target}" ${_property})
      if(NOT _dirs)
        continue()
      endif()
      set(_kept "")
      foreach(_dir IN LISTS _dirs)
        # Generator expressions are evaluated later; keep them as they are.
        if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
          list(APPEND _kept "${_dir}")
        else()
          message(STATUS "Dropping missing include directory of ${_target}: ${_dir}")
        endif()
      endforeach()
      set_target_properties("${_target}" PROPERTIES ${_property} "${_kept}")
    endforeach()
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL kangaroo_wbc_drop_missing_include_dirs)
