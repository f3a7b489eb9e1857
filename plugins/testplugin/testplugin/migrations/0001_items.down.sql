DROP TABLE testplugin_items;
