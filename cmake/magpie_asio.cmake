# magpie::asio — the optional Asio completion token (include/magpie/io/asio.hpp): an interface
# target that adds standalone Asio (Debian: libasio-dev) to magpie::magpie. Defined only if Asio's
# header is found; the core never needs it.
find_path(MAGPIE_ASIO_INCLUDE_DIR asio.hpp)
if(MAGPIE_ASIO_INCLUDE_DIR AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_library(magpie_asio INTERFACE)
  add_library(magpie::asio ALIAS magpie_asio)
  set_target_properties(magpie_asio PROPERTIES EXPORT_NAME asio)
  # Asio's directory in the build tree only: an installed magpie::asio gets the one that
  # magpieConfig.cmake finds on the consumer's machine.
  target_include_directories(magpie_asio SYSTEM INTERFACE $<BUILD_INTERFACE:${MAGPIE_ASIO_INCLUDE_DIR}>)
  target_compile_definitions(magpie_asio INTERFACE ASIO_NO_DEPRECATED)
  target_link_libraries(magpie_asio INTERFACE magpie::magpie)
  set(MAGPIE_HAVE_ASIO ON)
  message(STATUS "magpie: standalone Asio found in ${MAGPIE_ASIO_INCLUDE_DIR}: magpie::asio (use_task) is built")
else()
  set(MAGPIE_HAVE_ASIO OFF)
  message(STATUS "magpie: standalone Asio (libasio-dev) not found: magpie::asio and its tests are skipped")
endif()
