"""Built-in LP backend plugins (restricted-master protocol of ``privbench.protocol.lp``)."""
