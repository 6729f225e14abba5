# shop-fakes (examples/shop/fakes): the fake providers as a real process over HTTP.
shop_c_test(fakes test_fakes.c ex_common)
add_dependencies(shop_fakes shop-fakes)
